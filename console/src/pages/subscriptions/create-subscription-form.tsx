import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { Field } from '../../components/field.tsx';
import { OnceSecret } from '../../components/once-secret.tsx';
import { useAction } from '../../hooks/use-action.ts';
import { RateLimitField } from './rate-limit-field.tsx';
import type { Subscription } from './subscription-types.ts';

/** POST /api/v1/events/subscriptions for a webhook; the signing secret in the answer is shown once. */
export function CreateSubscriptionForm({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [patterns, setPatterns] = useState('');
  const [secret, setSecret] = useState('');
  const [attempts, setAttempts] = useState('5');
  const [timeout, setTimeoutSeconds] = useState('10');
  const [rate, setRate] = useState('');
  const [created, setCreated] = useState<{ name: string; secret: string } | null>(null);
  const create = useAction(async () => {
    const res = await post<{ subscription: Subscription }>('/events/subscriptions', {
      name,
      event_patterns: patterns
        .split(/[,\s]+/)
        .map((p) => p.trim())
        .filter(Boolean),
      delivery_method: 'webhook',
      enabled: true,
      webhook_config: {
        url,
        ...(secret ? { secret } : {}),
        retry_policy: { max_attempts: Number(attempts), retry_delay_seconds: 30, exponential_backoff: true },
        timeout_seconds: Number(timeout),
        ...(rate.trim() ? { rate_limit: Number(rate) } : {}),
      },
    });
    const shown = res.subscription.webhook_config?.secret ?? secret;
    setCreated({ name: res.subscription.name, secret: shown });
    setName('');
    setUrl('');
    setPatterns('');
    setSecret('');
    setRate('');
    onCreated();
  });
  const errors = create.error?.fieldErrors ?? {};
  return (
    <ActionForm
      label="Create webhook subscription"
      action={create}
      submit="Create subscription"
      submitClass="primary"
      errorTitle="Could not create the subscription"
    >
      {created ? (
        <OnceSecret
          label={`Signing secret of “${created.name}”`}
          value={created.secret}
          onDismiss={() => setCreated(null)}
        />
      ) : null}
      <Field label="Name" error={errors['name']}>
        {(p) => <input {...p} name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />}
      </Field>
      <Field label="Webhook URL" error={errors['webhook_config.url'] ?? errors['url']}>
        {(p) => (
          <input
            {...p}
            name="url"
            type="url"
            required
            placeholder="https://example.com/hooks/platform"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field
        label="Event patterns"
        error={errors['event_patterns']}
        hint="Comma-separated, e.g. user.*, order.**"
      >
        {(p) => (
          <input
            {...p}
            name="patterns"
            required
            value={patterns}
            onInput={(e) => setPatterns(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Secret" error={errors['webhook_config.secret']} hint="Empty: the platform generates one">
        {(p) => (
          <input
            {...p}
            type="password"
            autoComplete="new-password"
            value={secret}
            onInput={(e) => setSecret(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Attempts" error={errors['webhook_config.retry_policy.max_attempts']}>
        {(p) => (
          <input
            {...p}
            type="number"
            min={1}
            max={20}
            value={attempts}
            onInput={(e) => setAttempts(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Timeout (seconds)" error={errors['webhook_config.timeout_seconds']}>
        {(p) => (
          <input
            {...p}
            type="number"
            min={1}
            max={60}
            value={timeout}
            onInput={(e) => setTimeoutSeconds(e.currentTarget.value)}
          />
        )}
      </Field>
      <RateLimitField value={rate} onInput={setRate} error={errors['webhook_config.rate_limit']} />
    </ActionForm>
  );
}

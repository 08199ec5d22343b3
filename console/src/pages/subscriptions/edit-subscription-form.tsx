import { useState } from 'preact/hooks';
import { patch } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { useAction } from '../../hooks/use-action.ts';
import { RateLimitField } from './rate-limit-field.tsx';
import type { Subscription } from './subscription-types.ts';

const PATCH = 'PATCH /api/v1/events/subscriptions/{subscription_id}';

/**
 * Changes an existing webhook subscription with PATCH /events/subscriptions/{id} (only the fields sent
 * change): its rate limit, where emptying the field sends null, which removes the limit. The form starts
 * from the subscription as loaded and keeps what is typed while the page refreshes.
 */
export function EditSubscriptionForm({
  subscription,
  onSaved,
}: {
  subscription: Subscription;
  onSaved: () => void;
}) {
  const current = subscription.webhook_config?.rate_limit;
  const [rate, setRate] = useState(current === null || current === undefined ? '' : String(current));
  const [saved, setSaved] = useState('');
  const save = useAction(async () => {
    await patch(`/events/subscriptions/${encodeURIComponent(subscription.subscription_id)}`, {
      webhook_config: { rate_limit: rate.trim() ? Number(rate) : null },
    });
    setSaved(rate.trim() ? `The rate limit is now ${rate.trim()} per second.` : 'The rate limit is removed.');
    onSaved();
  });
  const errors = save.error?.fieldErrors ?? {};
  return (
    <section aria-labelledby="edit-subscription-title">
      <h2 id="edit-subscription-title">Edit subscription</h2>
      <RequiresOperation operation={PATCH} what="Changing a subscription">
        <ActionForm
          label="Edit subscription"
          action={save}
          submit="Save changes"
          errorTitle="Could not change the subscription"
          beforeRun={() => setSaved('')}
        >
          <RateLimitField value={rate} onInput={setRate} error={errors['webhook_config.rate_limit']} />
        </ActionForm>
        <SuccessNotice>{saved}</SuccessNotice>
      </RequiresOperation>
    </section>
  );
}

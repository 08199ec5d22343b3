import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { PurgeForm } from './purge-form.tsx';
import { ReplayForm } from './replay-form.tsx';

/** Replay stored events to subscriptions, and purge stored events: each a form that starts a task and follows it. */
export function ReplayPurgePage() {
  return (
    <Page title="Replay and purge">
      <section aria-labelledby="replay-title">
        <h2 id="replay-title">Replay events</h2>
        <p class="muted">Sends stored events again to the subscriptions they match (or the ones named).</p>
        <RequiresOperation operation="POST /api/v1/events/replay" what="Replay">
          <ReplayForm />
        </RequiresOperation>
      </section>
      <section aria-labelledby="purge-title">
        <h2 id="purge-title">Purge events</h2>
        <p class="muted">Deletes stored events that match, with their deliveries and audit trail.</p>
        <RequiresOperation operation="POST /api/v1/events/purge" what="Purge">
          <PurgeForm />
        </RequiresOperation>
      </section>
    </Page>
  );
}

import { useState } from 'preact/hooks';
import { del, post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Field } from '../../components/field.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';

interface BlockedIp {
  id: string;
  ip_address: string;
  cidr: string;
  reason: string;
  blocked_by: string;
  created_at: string;
  expires_at: string | null;
}

/**
 * Blocked addresses and ranges: list, block (with force for a range holding your own address), unblock.
 * `onChanged` runs after a block or unblock (the page's figures count the blocked addresses).
 */
export function BlockedIpsSection({ onChanged }: { onChanged?: () => void }) {
  const [page, setPage] = useState(1);
  const list = useApi<{ blocked_ips: BlockedIp[]; pagination: Pagination }>('/admin/security/blocked-ips', {
    query: { page, per_page: 20 },
  });
  const [ip, setIp] = useState('');
  const [reason, setReason] = useState('');
  const [hours, setHours] = useState('24');
  const [force, setForce] = useState(false);
  const block = useAction(async () => {
    await post('/admin/security/block-ip', {
      ip_address: ip.trim(),
      reason,
      duration_hours: Number(hours || 0),
      ...(force ? { force: true } : {}),
    });
    setIp('');
    setReason('');
    setForce(false);
    list.reload();
    onChanged?.();
  });
  const unblock = useAction(async (b: BlockedIp) => {
    await del(`/admin/security/blocked-ips/${encodeURIComponent(b.cidr)}`);
    list.reload();
    onChanged?.();
  });
  const errors = block.error?.fieldErrors ?? {};
  return (
    <section aria-labelledby="blocked-title">
      <h2 id="blocked-title">Blocked addresses</h2>
      <ApiView state={list} what="Blocked addresses" endpoint="GET /api/v1/admin/security/blocked-ips">
        {(d) => (
          <DataTable
            caption="Blocked addresses"
            columns={['Address', 'Reason', 'By', 'Since', 'Until', ACTIONS]}
            rows={d.blocked_ips}
            empty="No address is blocked."
            pagination={d.pagination}
            onPage={setPage}
            row={(b) => (
              <tr key={b.id}>
                <td>
                  <code>{b.ip_address}</code>
                </td>
                <td>{b.reason || '—'}</td>
                <td>{b.blocked_by}</td>
                <td class="nowrap">{formatTime(b.created_at)}</td>
                <td class="nowrap">{b.expires_at ? formatTime(b.expires_at) : 'until removed'}</td>
                <td>
                  <ConfirmButton
                    label="Unblock"
                    title={`Unblock ${b.ip_address}?`}
                    confirmLabel="Unblock"
                    onConfirm={() => void unblock.run(b)}
                  />
                </td>
              </tr>
            )}
          />
        )}
      </ApiView>
      <ErrorNotice error={unblock.error} title="Could not unblock" />
      <RequiresOperation operation="POST /api/v1/admin/security/block-ip" what="Blocking addresses">
        <ActionForm
          label="Block an address"
          action={block}
          submit="Block"
          submitClass="danger"
          errorTitle="Could not block"
        >
          <h3>Block an address</h3>
          <Field label="Address or range" error={errors['ip_address']} hint="203.0.113.7 or 203.0.113.0/24">
            {(p) => <input {...p} required value={ip} onInput={(e) => setIp(e.currentTarget.value)} />}
          </Field>
          <Field label="Reason" error={errors['reason']}>
            {(p) => <input {...p} value={reason} onInput={(e) => setReason(e.currentTarget.value)} />}
          </Field>
          <Field label="Hours" error={errors['duration_hours']} hint="0: until removed">
            {(p) => (
              <input
                {...p}
                type="number"
                min={0}
                value={hours}
                onInput={(e) => setHours(e.currentTarget.value)}
              />
            )}
          </Field>
          <label class="check-label">
            <input type="checkbox" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} /> Even
            if it contains my own address
          </label>
        </ActionForm>
      </RequiresOperation>
    </section>
  );
}

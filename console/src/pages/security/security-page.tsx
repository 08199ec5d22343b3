import { useEffect, useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { BlockedIpsSection } from './blocked-ips-section.tsx';

interface Alert {
  id: string;
  severity: string;
  type: string;
  title?: string;
  message?: string;
  description?: string;
  timestamp: string;
  status: string;
  affected_resources?: string[];
}

interface SecurityStatus {
  status: string;
  last_scan: string | null | Record<string, unknown>;
  alerts: Alert[];
  metrics: Record<string, number>;
}

function AlertsTable({ alerts }: { alerts: Alert[] }) {
  if (alerts.length === 0) return <p class="muted">No alerts.</p>;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Severity</th>
            <th scope="col">Alert</th>
            <th scope="col">Affected</th>
            <th scope="col">Time</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {alerts.map((a) => (
            <tr key={a.id}>
              <td>
                <Badge value={a.severity} />
              </td>
              <td>
                <strong>{a.title ?? a.message ?? a.type}</strong>
                {a.description ? <div class="small">{a.description}</div> : null}
              </td>
              <td class="small">{(a.affected_resources ?? []).join(', ')}</td>
              <td class="nowrap">{formatTime(a.timestamp)}</td>
              <td>
                <Badge value={a.status} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ScanSection() {
  const [scanId, setScanId] = useState<string | null>(null);
  const [components, setComponents] = useState(['plugins', 'configuration', 'permissions']);
  const [threshold, setThreshold] = useState('low');
  const [finished, setFinished] = useState(false);
  const result = useApi<Record<string, unknown>>(
    scanId ? `/security/scan/${encodeURIComponent(scanId)}` : null,
    {
      ...(finished ? {} : { refreshMs: 2_000 }),
    },
  );
  const scanStatus = String(
    result.data?.['status'] ?? (result.data?.['scan'] as { status?: string })?.status ?? '',
  );
  useEffect(() => {
    if (['completed', 'failed', 'cancelled'].includes(scanStatus)) setFinished(true);
  }, [scanStatus]);
  const start = useAction(async () => {
    const res = await post<{ scan_id: string }>('/security/scan', {
      type: 'full',
      components,
      severity_threshold: threshold,
    });
    setFinished(false);
    setScanId(res.scan_id);
  });
  return (
    <section aria-labelledby="scan-title">
      <h2 id="scan-title">Scan</h2>
      <RequiresOperation operation="POST /api/v1/security/scan" what="Security scans">
        <form
          class="form-grid"
          aria-label="Start a security scan"
          onSubmit={(e) => {
            e.preventDefault();
            void start.run();
          }}
        >
          <fieldset>
            <legend>Components</legend>
            {['plugins', 'configuration', 'permissions'].map((c) => (
              <label key={c} class="check-label">
                <input
                  type="checkbox"
                  checked={components.includes(c)}
                  onChange={(e) =>
                    setComponents(
                      e.currentTarget.checked ? [...components, c] : components.filter((x) => x !== c),
                    )
                  }
                />{' '}
                {c}
              </label>
            ))}
          </fieldset>
          <label>
            Report from severity{' '}
            <select value={threshold} onChange={(e) => setThreshold(e.currentTarget.value)}>
              <option>low</option>
              <option>medium</option>
              <option>high</option>
              <option>critical</option>
            </select>
          </label>
          <ErrorNotice error={start.error} title="Could not start the scan" />
          <div class="actions">
            <button type="submit" disabled={start.busy || components.length === 0}>
              Start scan
            </button>
          </div>
        </form>
      </RequiresOperation>
      {scanId ? (
        <ApiView state={result} what="Scan result" endpoint="GET /api/v1/security/scan/{id}">
          {(d) => <JsonView value={d} label="Scan result" />}
        </ApiView>
      ) : null}
    </section>
  );
}

/** Security status and its figures, alerts, blocked addresses, and scans. */
export function SecurityPage() {
  const status = useApi<SecurityStatus>('/security/status', { refreshMs: 15_000 });
  const alerts = useApi<{ alerts: Alert[] }>('/admin/security/alerts', { refreshMs: 15_000 });
  return (
    <Page title="Security">
      <ApiView state={status} what="Security status" endpoint="GET /api/v1/security/status">
        {(s) => (
          <dl class="stats">
            <div>
              <dt>Status</dt>
              <dd>
                <Badge value={s.status} />
              </dd>
            </div>
            <div>
              <dt>Last scan</dt>
              <dd>
                {typeof s.last_scan === 'string' || s.last_scan === null
                  ? formatTime(s.last_scan)
                  : formatTime(String(s.last_scan['completed_at'] ?? s.last_scan['started_at'] ?? ''))}
              </dd>
            </div>
            {Object.entries(s.metrics ?? {}).map(([k, v]) => (
              <div key={k}>
                <dt>{k.replaceAll('_', ' ')}</dt>
                <dd>{formatNumber(v)}</dd>
              </div>
            ))}
          </dl>
        )}
      </ApiView>
      <h2>Alerts</h2>
      <ApiView state={alerts} what="Alerts" endpoint="GET /api/v1/admin/security/alerts">
        {(d) => <AlertsTable alerts={d.alerts} />}
      </ApiView>
      <BlockedIpsSection />
      <ScanSection />
    </Page>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { AlertsSection } from './alerts-section.tsx';
import { BlockedIpsSection } from './blocked-ips-section.tsx';
import { type Scan, ScanResult } from './scan-result.tsx';

interface SecurityStatus {
  status: string;
  last_scan: string | null;
  open_alerts?: number;
  metrics: Record<string, number>;
}

function ScanSection({ onFinished }: { onFinished: () => void }) {
  const [scanId, setScanId] = useState<string | null>(null);
  const [components, setComponents] = useState(['plugins', 'configuration', 'permissions']);
  const [threshold, setThreshold] = useState('low');
  const [finished, setFinished] = useState(false);
  const result = useApi<{ scan: Scan }>(scanId ? `/security/scan/${encodeURIComponent(scanId)}` : null, {
    ...(finished ? {} : { refreshMs: REFRESH.progress }),
  });
  const scanStatus = result.data?.scan.status ?? '';
  useEffect(() => {
    if (['completed', 'failed', 'cancelled'].includes(scanStatus)) {
      setFinished(true);
      onFinished();
    }
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
          {(d) => <ScanResult scan={d.scan} />}
        </ApiView>
      ) : null}
    </section>
  );
}

/** Security status and its figures, alerts, blocked addresses, and scans. */
export function SecurityPage() {
  const status = useApi<SecurityStatus>('/security/status', { refreshMs: REFRESH.slow });
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
              <dd>{formatTime(s.last_scan)}</dd>
            </div>
            {s.open_alerts === undefined ? null : (
              <div>
                <dt>Open alerts</dt>
                <dd>{formatNumber(s.open_alerts)}</dd>
              </div>
            )}
            {Object.entries(s.metrics ?? {}).map(([k, v]) => (
              <div key={k}>
                <dt>{k.replaceAll('_', ' ')}</dt>
                <dd>{formatNumber(v)}</dd>
              </div>
            ))}
          </dl>
        )}
      </ApiView>
      <AlertsSection />
      <BlockedIpsSection />
      <ScanSection onFinished={status.reload} />
    </Page>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { CheckboxGroup } from '../../components/checkbox-group.tsx';
import { KeyValues } from '../../components/key-values.tsx';
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

const SCANNED = ['plugins', 'configuration', 'permissions'] as const;

function ScanSection({ onFinished }: { onFinished: () => void }) {
  const [scanId, setScanId] = useState<string | null>(null);
  const [components, setComponents] = useState<string[]>([...SCANNED]);
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
        <ActionForm
          label="Start a security scan"
          action={start}
          submit="Start scan"
          disabled={components.length === 0}
          errorTitle="Could not start the scan"
        >
          <CheckboxGroup legend="Components" options={SCANNED} value={components} onChange={setComponents} />
          <label>
            Report from severity{' '}
            <select value={threshold} onChange={(e) => setThreshold(e.currentTarget.value)}>
              <option>low</option>
              <option>medium</option>
              <option>high</option>
              <option>critical</option>
            </select>
          </label>
        </ActionForm>
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
          <KeyValues
            variant="stats"
            items={[
              ['Status', <Badge value={s.status} />],
              ['Last scan', formatTime(s.last_scan)],
              s.open_alerts !== undefined && ['Open alerts', formatNumber(s.open_alerts)],
              ...Object.entries(s.metrics ?? {}).map(
                ([k, v]) => [k.replaceAll('_', ' '), formatNumber(v)] as const,
              ),
            ]}
          />
        )}
      </ApiView>
      <AlertsSection onChanged={status.reload} />
      <BlockedIpsSection onChanged={status.reload} />
      <ScanSection onFinished={status.reload} />
    </Page>
  );
}

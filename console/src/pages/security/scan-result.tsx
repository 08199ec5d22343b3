import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { formatNumber } from '../../format.ts';

export interface Scan {
  scan_id: string;
  status: string;
  error?: string | null;
  duration_ms?: number | null;
  summary?: {
    total_findings: number;
    by_severity: Record<string, number>;
    checks_run: number;
    checks_passed: number;
    checks_failed: number;
    below_threshold: number;
  };
  findings?: {
    id: string;
    severity: string;
    title: string;
    description: string;
    affected_resources: string[];
    recommendation: string;
  }[];
}

/** A scan's state, its summary by severity, and each finding with what to do about it. */
export function ScanResult({ scan }: { scan: Scan }) {
  const s = scan.summary;
  return (
    <div aria-live="polite" data-testid="scan-result">
      <p>
        Scan <code>{scan.scan_id}</code> <Badge value={scan.status} />
        {scan.duration_ms ? <span class="muted"> in {formatNumber(scan.duration_ms)} ms</span> : null}
        {scan.error ? <span class="field-error"> {scan.error}</span> : null}
      </p>
      {s ? (
        <KeyValues
          variant="stats"
          items={[
            ['Findings', formatNumber(s.total_findings)],
            ...Object.entries(s.by_severity).map(([k, v]) => [k, formatNumber(v)] as const),
            ['Checks passed / run', `${formatNumber(s.checks_passed)} / ${formatNumber(s.checks_run)}`],
          ]}
        />
      ) : null}
      {scan.findings?.length ? (
        <DataTable
          caption="Findings"
          columns={['Severity', 'Finding', 'Affected', 'Recommendation']}
          rows={scan.findings}
          empty={null}
          row={(f) => (
            <tr key={f.id}>
              <td>
                <Badge value={f.severity} />
              </td>
              <td>
                <strong>{f.title}</strong>
                <div class="small">{f.description}</div>
              </td>
              <td class="small break">{f.affected_resources.join(', ')}</td>
              <td class="small">{f.recommendation}</td>
            </tr>
          )}
        />
      ) : null}
    </div>
  );
}

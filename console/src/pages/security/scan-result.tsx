import { Badge } from '../../components/badge.tsx';
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
        <dl class="stats">
          <div>
            <dt>Findings</dt>
            <dd>{formatNumber(s.total_findings)}</dd>
          </div>
          {Object.entries(s.by_severity).map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{formatNumber(v)}</dd>
            </div>
          ))}
          <div>
            <dt>Checks passed / run</dt>
            <dd>
              {formatNumber(s.checks_passed)} / {formatNumber(s.checks_run)}
            </dd>
          </div>
        </dl>
      ) : null}
      {scan.findings?.length ? (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Severity</th>
                <th scope="col">Finding</th>
                <th scope="col">Affected</th>
                <th scope="col">Recommendation</th>
              </tr>
            </thead>
            <tbody>
              {scan.findings.map((f) => (
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
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}

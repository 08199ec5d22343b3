import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { Page } from '../../components/page.tsx';
import { formatDuration, formatNumber, formatRatio } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { MetricsPanel } from './metrics-panel.tsx';

interface Status {
  status: string;
  version: string;
  environment: string;
  uptime: number;
  components: Record<string, string | ({ status: string } & Record<string, unknown>)>;
}

interface ComponentsHealth {
  overall_status: string;
  components: {
    name: string;
    status: string;
    checks?: ({ name: string; status: string } & Record<string, unknown>)[];
  }[];
}

interface Summary {
  requests?: Record<string, number>;
  errors?: { total?: number; rate?: number; by_status?: Record<string, number> };
  resources?: Record<string, number>;
}

/** A component's figures, flattened one level (`connection_pool.active`), skipping its status. */
function figures(value: Record<string, unknown>): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(value)) {
    if (k === 'status') continue;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) {
        if (typeof v2 !== 'object') out.push([`${k}.${k2}`, String(v2)]);
      }
    } else if (!Array.isArray(v)) out.push([k, typeof v === 'number' ? formatNumber(v, 2) : String(v)]);
  }
  return out;
}

function StatusCards({ s }: { s: Status }) {
  return (
    <>
      <dl class="stats">
        <div>
          <dt>Status</dt>
          <dd>
            <Badge value={s.status} />
          </dd>
        </div>
        <div>
          <dt>Version</dt>
          <dd>{s.version}</dd>
        </div>
        <div>
          <dt>Environment</dt>
          <dd>{s.environment}</dd>
        </div>
        <div>
          <dt>Uptime</dt>
          <dd>{formatDuration(s.uptime)}</dd>
        </div>
      </dl>
      <h2>Components</h2>
      <div class="cards">
        {Object.entries(s.components).map(([name, c]) => (
          <article class="card" key={name} aria-label={`Component ${name}`}>
            <h3>
              {name} <Badge value={typeof c === 'string' ? c : c.status} />
            </h3>
            {typeof c === 'object' ? (
              <dl class="kv">
                {figures(c).map(([k, v]) => (
                  <div key={k}>
                    <dt>{k.replaceAll('_', ' ')}</dt>
                    <dd>{v}</dd>
                  </div>
                ))}
              </dl>
            ) : null}
          </article>
        ))}
      </div>
    </>
  );
}

function SummaryCards({ d }: { d: Summary }) {
  const r = d.requests ?? {};
  return (
    <dl class="stats">
      <div>
        <dt>Requests</dt>
        <dd>{formatNumber(r['total'])}</dd>
      </div>
      <div>
        <dt>Success rate</dt>
        <dd>{formatRatio(r['success_rate'])}</dd>
      </div>
      <div>
        <dt>Average / p95 / p99</dt>
        <dd>
          {formatNumber(r['avg_response_time_ms'], 1)} / {formatNumber(r['p95_response_time_ms'], 1)} /{' '}
          {formatNumber(r['p99_response_time_ms'], 1)} ms
        </dd>
      </div>
      <div>
        <dt>Errors</dt>
        <dd>
          {formatNumber(d.errors?.total)} ({formatRatio(d.errors?.rate)})
        </dd>
      </div>
      <div>
        <dt>Peak memory</dt>
        <dd>{formatNumber(d.resources?.['peak_memory_mb'], 1)} MB</dd>
      </div>
    </dl>
  );
}

export function OverviewPage() {
  const status = useApi<Status>('/status', { refreshMs: REFRESH.status });
  const health = useApi<ComponentsHealth>('/components/health', { refreshMs: REFRESH.slow });
  const summary = useApi<Summary>('/metrics/summary', { refreshMs: REFRESH.status });
  return (
    <Page title="Overview">
      <ApiView state={status} what="System status" endpoint="GET /api/v1/status">
        {(s) => <StatusCards s={s} />}
      </ApiView>
      <h2>Traffic summary</h2>
      <ApiView state={summary} what="Metrics summary" endpoint="GET /api/v1/metrics/summary">
        {(d) => <SummaryCards d={d} />}
      </ApiView>
      <MetricsPanel />
      <h2>Health checks</h2>
      <ApiView state={health} what="Component health" endpoint="GET /api/v1/components/health">
        {(h) => (
          <>
            <p>
              Overall: <Badge value={h.overall_status} />
            </p>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Component</th>
                    <th scope="col">Status</th>
                    <th scope="col">Checks</th>
                  </tr>
                </thead>
                <tbody>
                  {h.components.map((c) => (
                    <tr key={c.name}>
                      <td>{c.name}</td>
                      <td>
                        <Badge value={c.status} />
                      </td>
                      <td>
                        {(c.checks ?? []).map((check) => (
                          <span key={check.name} class="check">
                            {check.name} <Badge value={check.status} />
                          </span>
                        ))}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
      </ApiView>
    </Page>
  );
}

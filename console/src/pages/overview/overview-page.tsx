import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { KeyValues } from '../../components/key-values.tsx';
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
      <KeyValues
        variant="stats"
        items={[
          ['Status', <Badge value={s.status} />],
          ['Version', s.version],
          ['Environment', s.environment],
          ['Uptime', formatDuration(s.uptime)],
        ]}
      />
      <h2>Components</h2>
      <div class="cards">
        {Object.entries(s.components).map(([name, c]) => (
          <article class="card" key={name} aria-label={`Component ${name}`}>
            <h3>
              {name} <Badge value={typeof c === 'string' ? c : c.status} />
            </h3>
            {typeof c === 'object' ? (
              <KeyValues items={figures(c).map(([k, v]) => [k.replaceAll('_', ' '), v] as const)} />
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
    <KeyValues
      variant="stats"
      items={[
        ['Requests', formatNumber(r['total'])],
        ['Success rate', formatRatio(r['success_rate'])],
        [
          'Average / p95 / p99',
          `${formatNumber(r['avg_response_time_ms'], 1)} / ${formatNumber(r['p95_response_time_ms'], 1)} / ${formatNumber(r['p99_response_time_ms'], 1)} ms`,
        ],
        ['Errors', `${formatNumber(d.errors?.total)} (${formatRatio(d.errors?.rate)})`],
        ['Peak memory', `${formatNumber(d.resources?.['peak_memory_mb'], 1)} MB`],
      ]}
    />
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
            <DataTable
              caption="Health checks"
              columns={['Component', 'Status', 'Checks']}
              rows={h.components}
              empty="No components reported."
              row={(c) => (
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
              )}
            />
          </>
        )}
      </ApiView>
    </Page>
  );
}

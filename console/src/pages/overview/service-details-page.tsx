import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { Link } from '../../components/link.tsx';
import { ObjectFields, words } from '../../components/object-fields.tsx';
import { Page } from '../../components/page.tsx';
import { formatDuration } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import type { ComponentsHealth, Status } from './overview-types.ts';

/** Every component's internal counters (GET /status) and every health check (GET /components/health). */
export function ServiceDetailsPage() {
  const status = useApi<Status>('/status', { refreshMs: REFRESH.status });
  const health = useApi<ComponentsHealth>('/components/health', { refreshMs: REFRESH.slow });
  return (
    <Page title="Service details" actions={<Link to="/">← Overview</Link>}>
      <ApiView state={status} what="System status" endpoint="GET /api/v1/status">
        {(s) => (
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
                    {words(name)} <Badge value={typeof c === 'string' ? c : c.status} />
                  </h3>
                  {typeof c === 'object' ? <ObjectFields value={c} skip={['status']} /> : null}
                </article>
              ))}
            </div>
          </>
        )}
      </ApiView>
      <h2>Health checks</h2>
      <ApiView state={health} what="Component health" endpoint="GET /api/v1/components/health">
        {(h) => (
          <DataTable
            caption="Health checks"
            columns={['Component', 'Status', 'Checks']}
            rows={h.components}
            empty="No components reported."
            row={(c) => (
              <tr key={c.name}>
                <th scope="row">{c.name}</th>
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
        )}
      </ApiView>
    </Page>
  );
}

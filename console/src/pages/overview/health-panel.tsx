import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ObjectFields, words } from '../../components/object-fields.tsx';
import type { ApiState } from '../../hooks/use-api.ts';
import type { ComponentsHealth } from './overview-types.ts';

const GOOD = new Set(['healthy', 'pass', 'skipped']);

/**
 * Overall health first, then each component that is not healthy with the checks that say why (their status
 * and figures: the error, the backlog against its limit, …). All healthy is one line.
 */
export function HealthPanel({ state }: { state: ApiState<ComponentsHealth> }) {
  return (
    <section aria-labelledby="health-title">
      <h2 id="health-title">Health</h2>
      <ApiView state={state} what="Component health" endpoint="GET /api/v1/components/health">
        {(h) => {
          const bad = h.components.filter((c) => !GOOD.has(c.status));
          return (
            <>
              <p>
                <span class="figure" data-testid="overall-health">
                  <Badge value={h.overall_status} />
                </span>{' '}
                {bad.length === 0
                  ? `All ${h.components.length} components are healthy.`
                  : `${bad.length} of ${h.components.length} components need attention:`}
              </p>
              {bad.length > 0 ? (
                <ul class="problems" aria-label="Components that are not healthy">
                  {bad.map((c) => (
                    <li key={c.name} class={c.status === 'warning' || c.status === 'degraded' ? 'warn' : ''}>
                      <strong>{words(c.name)}</strong> <Badge value={c.status} />
                      {(c.checks ?? [])
                        .filter((k) => !GOOD.has(k.status))
                        .map((k) => (
                          <div key={k.name}>
                            {words(k.name)} <Badge value={k.status} />
                            <ObjectFields value={k} skip={['name', 'status']} empty="" />
                          </div>
                        ))}
                    </li>
                  ))}
                </ul>
              ) : null}
            </>
          );
        }}
      </ApiView>
    </section>
  );
}

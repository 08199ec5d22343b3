import type { ValidateFunction } from 'ajv';
import type { SharedState } from '../cluster/shared-state.js';
import { AppError } from '../http/app-error.js';
import { compileDataSchema, dataProblems } from './data-schema.js';
import type { EventTypeStore } from './event-type-store.js';
import { pluginDeclaredTypes } from './plugin-declared-types.js';

/** One type of the catalogue, as registered. */
export interface CatalogueType {
  eventType: string;
  description: string;
  schema: Record<string, unknown>;
  examples: unknown[];
  /** `admin`, or `plugin:<id>` for a type a plugin's manifest declares. */
  registeredBy: string;
  /** Who registered or last changed it: the administrator's name, or the plugin's id. */
  updatedBy: string;
  createdAt: string;
  updatedAt: string;
}

/** One type of the catalogue with its compiled validator. */
export interface CatalogueEntry extends CatalogueType {
  validate: ValidateFunction;
}

/** Published whenever an administrator changes the catalogue; every instance reloads it. */
export const CATALOGUE_CHANGED = 'events.catalogue.changed';
/** Published by the plugin manager on every change of an installed plugin (their types come and go with them). */
const PLUGINS_CHANGED = 'plugins.changed';
// A safety net for a lost announcement (a Redis reconnect): reload at least this often.
const RELOAD_MS = 30_000;
/** How many of a payload's problems an answer lists. */
const MAX_PROBLEMS = 20;

/**
 * The registered event types, loaded once and followed across instances, with their schemas compiled. The emit
 * path pays one Map lookup for a type that is not registered, and the compiled validator for one that is.
 */
export class EventCatalogue {
  private entries = new Map<string, CatalogueEntry>();
  private reloading: Promise<void> = Promise.resolve();
  private readonly unsubscribe: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      store: EventTypeStore;
      shared: SharedState;
      strict: () => boolean;
      onError: (err: unknown) => void;
    },
  ) {}

  async start(): Promise<void> {
    const reload = () => {
      this.reload().catch(this.deps.onError);
    };
    this.unsubscribe.push(this.deps.shared.subscribe(CATALOGUE_CHANGED, reload));
    this.unsubscribe.push(this.deps.shared.subscribe(PLUGINS_CHANGED, reload));
    this.timer = setInterval(reload, RELOAD_MS);
    this.timer.unref();
    await this.reload();
  }

  stop(): void {
    for (const off of this.unsubscribe.splice(0)) off();
    if (this.timer) clearInterval(this.timer);
  }

  /** The catalogue, by type name. */
  list(): CatalogueEntry[] {
    return [...this.entries.values()].sort((a, b) => a.eventType.localeCompare(b.eventType));
  }

  get(eventType: string): CatalogueEntry | undefined {
    return this.entries.get(eventType);
  }

  /** Reloads here at once, then tells the other instances. */
  async changed(): Promise<void> {
    await this.reload();
    if (this.deps.shared.kind !== 'memory') await this.deps.shared.publish(CATALOGUE_CHANGED, {});
  }

  reload(): Promise<void> {
    this.reloading = this.reloading
      .catch(() => {})
      .then(async () => {
        const [rows, plugins] = await Promise.all([
          this.deps.store.list(),
          this.deps.store.pluginManifests(),
        ]);
        // A schema that did not change keeps its compiled validator.
        const compiled = new Map<string, ValidateFunction>();
        for (const e of this.entries.values()) compiled.set(JSON.stringify(e.schema), e.validate);
        const next = new Map<string, CatalogueEntry>();
        const add = (entry: CatalogueType) => {
          const key = JSON.stringify(entry.schema);
          const { validate, error } = compiled.has(key)
            ? { validate: compiled.get(key), error: undefined }
            : compileDataSchema(entry.schema);
          if (validate === undefined) {
            // Checked when registered; only a change of the compiler could make it fail here.
            this.deps.onError(
              new Error(`the schema of '${entry.eventType}' ${error}; its emits are not validated`),
            );
            return;
          }
          compiled.set(key, validate);
          next.set(entry.eventType, { ...entry, validate });
        };
        for (const row of rows) {
          add({
            eventType: row.event_type,
            description: row.description,
            schema: JSON.parse(row.schema) as Record<string, unknown>,
            examples: JSON.parse(row.examples) as unknown[],
            registeredBy: 'admin',
            updatedBy: row.registered_by,
            createdAt: row.created_at,
            updatedAt: row.updated_at,
          });
        }
        // A plugin's declaration stands over an administrator's while the plugin is installed; of two plugins,
        // the one installed first keeps the type.
        const claimed = new Set<string>();
        for (const declared of pluginDeclaredTypes(plugins)) {
          if (claimed.has(declared.eventType)) continue;
          claimed.add(declared.eventType);
          add(declared);
        }
        this.entries = next;
      });
    return this.reloading;
  }

  /**
   * Checks an emit's `data` against its type's schema. Data the client encrypted is passed on unread, as
   * everywhere else. @throws AppError VALIDATION_ERROR (422) naming the first field (`data.amount`) with every
   * problem in `details.errors`; EVENT_TYPE_NOT_REGISTERED (422) for an unregistered type when the catalogue is
   * strict (`events.catalogue_strict`)
   */
  check(eventType: string, data: Record<string, unknown>, typeField: string): void {
    const entry = this.entries.get(eventType);
    if (entry === undefined) {
      if (!this.deps.strict()) return;
      throw new AppError(
        'EVENT_TYPE_NOT_REGISTERED',
        `The event type '${eventType}' is not in the event catalogue (GET /api/v1/events/types), and the catalogue is strict`,
        { details: { field: typeField, event_type: eventType } },
      );
    }
    if (data['encrypted'] === true) return;
    if (entry.validate(data)) return;
    const problems = dataProblems(entry.validate).slice(0, MAX_PROBLEMS);
    const first = problems[0] ?? { field: 'data', reason: 'is invalid' };
    throw new AppError(
      'VALIDATION_ERROR',
      `${first.field} ${first.reason} (the schema of '${eventType}' in the event catalogue)`,
      { details: { field: first.field, reason: first.reason, errors: problems, event_type: eventType } },
    );
  }
}

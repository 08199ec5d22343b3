import { AppError, notFound } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import type { CatalogueEntry, EventCatalogue } from './event-catalogue.js';
import type { EventReader } from './event-data.js';
import type { EventTypeListeners, TypeListeners } from './event-type-listeners.js';
import type { EventTypeStore } from './event-type-store.js';
import { typeDefinitionProblems } from './type-definition-problems.js';

export interface TypeDefinition {
  description?: string | undefined;
  schema: Record<string, unknown>;
  examples?: Record<string, unknown>[] | undefined;
}

/** The catalogue as the API shows it: each type with its listeners. */
export type EventTypeView = ReturnType<typeof view>;

/** Registering, changing, removing and reading the types of the event catalogue. */
export class EventTypeService {
  constructor(
    private readonly deps: {
      catalogue: EventCatalogue;
      store: EventTypeStore;
      listeners: EventTypeListeners;
    },
  ) {}

  /**
   * Registers or replaces an administrator's type; answers whether it is new. Every instance validates with the
   * new schema once this resolves here and the announcement has reached it.
   * @throws AppError INVALID_EVENT_TYPE, VALIDATION_ERROR (the schema, an example, a reserved type),
   *   RESOURCE_CONFLICT (a plugin declares the type)
   */
  async put(eventType: string, definition: TypeDefinition, username: string): Promise<boolean> {
    this.assertNotPlugins(eventType, 'changed');
    const problems = typeDefinitionProblems(eventType, definition, { type: 'event_type', prefix: '' });
    const first = problems[0];
    if (first !== undefined) {
      if (first.field === 'event_type' && first.reason.startsWith('must be')) {
        throw new AppError('INVALID_EVENT_TYPE', `'${eventType}' ${first.reason}`, {
          details: { field: 'event_type', value: eventType },
        });
      }
      throw new AppError('VALIDATION_ERROR', `${first.field} ${first.reason}`, {
        details: { field: first.field, reason: first.reason, errors: problems },
      });
    }
    const now = nowIso();
    const created = await this.deps.store.put({
      event_type: eventType,
      description: definition.description ?? '',
      schema: JSON.stringify(definition.schema),
      examples: JSON.stringify(definition.examples ?? []),
      registered_by: username,
      created_at: now,
      updated_at: now,
    });
    await this.deps.catalogue.changed();
    return created;
  }

  /** @throws AppError RESOURCE_NOT_FOUND, RESOURCE_CONFLICT (a plugin's type goes only with the plugin) */
  async remove(eventType: string): Promise<void> {
    this.assertNotPlugins(eventType, 'removed');
    if (!(await this.deps.store.delete(eventType))) throw notFound('event type', eventType);
    await this.deps.catalogue.changed();
  }

  async list(reader: EventReader): Promise<EventTypeView[]> {
    const listenersOf = await this.deps.listeners.forReader(reader);
    return this.deps.catalogue.list().map((e) => view(e, listenersOf(e.eventType)));
  }

  /** @throws AppError RESOURCE_NOT_FOUND */
  async get(eventType: string, reader: EventReader): Promise<EventTypeView> {
    const entry = this.deps.catalogue.get(eventType);
    if (!entry) throw notFound('event type', eventType);
    const listenersOf = await this.deps.listeners.forReader(reader);
    return view(entry, listenersOf(eventType));
  }

  private assertNotPlugins(eventType: string, what: string): void {
    const entry = this.deps.catalogue.get(eventType);
    if (entry === undefined || entry.registeredBy === 'admin') return;
    throw new AppError(
      'RESOURCE_CONFLICT',
      `The event type '${eventType}' is declared by ${entry.registeredBy}; it is ${what} only with that plugin (update or uninstall it)`,
      { details: { event_type: eventType, registered_by: entry.registeredBy } },
    );
  }
}

function view(e: CatalogueEntry, listeners: TypeListeners) {
  return {
    event_type: e.eventType,
    description: e.description,
    schema: e.schema,
    examples: e.examples as Record<string, unknown>[],
    registered_by: e.registeredBy,
    updated_by: e.updatedBy,
    created_at: e.createdAt,
    updated_at: e.updatedAt,
    listeners,
  };
}

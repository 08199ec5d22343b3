import { EventEmitter } from 'node:events';

/**
 * Internal events, one typed map: emitting an unknown name or a wrong payload does not compile.
 * The event system turns these into stored platform events (decisions §4, "events the platform emits itself").
 */
export interface PlatformEventMap {
  'platform.event': {
    type: string;
    source: string;
    data: Record<string, unknown>;
    actor?: { id: string; username: string } | undefined;
    requestId?: string | undefined;
  };
}

type Listener<K extends keyof PlatformEventMap> = (payload: PlatformEventMap[K]) => void;

export class PlatformEvents {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  emit<K extends keyof PlatformEventMap>(name: K, payload: PlatformEventMap[K]): void {
    this.emitter.emit(name, payload);
  }

  on<K extends keyof PlatformEventMap>(name: K, listener: Listener<K>): () => void {
    this.emitter.on(name, listener);
    return () => this.emitter.off(name, listener);
  }

  /** Shorthand for the platform's own events: `system.config.updated`, `auth.login`, … */
  announce(
    type: string,
    source: 'system' | 'auth' | `plugin:${string}`,
    data: Record<string, unknown>,
    context: { actor?: { id: string; username: string } | undefined; requestId?: string | undefined } = {},
  ): void {
    this.emit('platform.event', { type, source, data, actor: context.actor, requestId: context.requestId });
  }
}

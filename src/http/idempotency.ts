import { hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import stringify from 'safe-stable-stringify';
import type { PlatformConfig } from '../config/config-schema.js';
import {
  type ClaimOutcome,
  type HeldKey,
  type IdempotencyKeyRef,
  type IdempotencyStore,
  type KeyToRecord,
  keyName,
} from '../storage/idempotency-store.js';
import { AppError } from './app-error.js';
import type { App } from './app-type.js';
import { withIdempotencyHeaders } from './idempotency-schemas.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A creating route that takes an `Idempotency-Key` header: a repeat with the same key and input answers the
     * first answer again instead of creating a second resource (src/http/idempotency.ts).
     */
    idempotent?: boolean;
    /**
     * For a route that writes `idempotencyRef` in its own transaction: the answer for what a request under that
     * key already committed, if anything. Consulted when the key is claimed or held by a request that does not
     * answer (its process died after the commit, before the answer was stored), so a retry replays instead of
     * creating again (ADR 0011). `since`: what was committed before it is past the key's lifetime.
     */
    idempotentCommitted?: (request: FastifyRequest, ref: string, since: string) => Promise<unknown>;
    /**
     * For a route that writes the key's row itself, answered, in the transaction of what it creates
     * (`recordedKey`: the event writer's batch) instead of the key being claimed before it runs and its answer
     * stored after, two writes of their own: the answer for its record `owner` (the event's id), built again
     * from what the record keeps, byte for byte as the first; undefined if the record is gone.
     */
    idempotentRecorded?: (request: FastifyRequest, owner: string) => Promise<unknown>;
  }
}

/** Stored answers are sealed (events/event-cipher.ts): a subscription's answer holds its signing secret. */
interface AnswerCipher {
  seal(plain: string): string;
  open(sealed: string): string;
}

/** How long a request that finds its key held by a running one waits for that one's answer. */
const WAIT_MS = 5_000;
/**
 * How long a running request holds its key before another may take it over: longer than any creating route
 * takes, so only a request whose instance died loses its key (it never answered, so nothing is replayed).
 */
const LEASE_MS = 60_000;
const FIRST_POLL_MS = 20;
const JSON_TYPE = 'application/json; charset=utf-8';
const MAX_POLL_MS = 250;

/**
 * A request whose route records its key itself (`idempotentRecorded`): the key, how to settle it the usual way
 * (`repeatOfTakenKey`), and the requests of this instance with the same key waiting for its answer.
 */
interface Recording extends KeyToRecord {
  /** `keyName` of the key. */
  name: string;
  settle: (request: FastifyRequest, reply: FastifyReply, ref: IdempotencyKeyRef) => Promise<boolean>;
  waiting: (() => void)[] | undefined;
}
const recordings = new WeakMap<FastifyRequest, Recording>();

/** The Idempotency-Key a route with `idempotentRecorded` writes with what it creates; undefined without one. */
export function recordedKey(request: FastifyRequest): KeyToRecord | undefined {
  return recordings.get(request);
}

/**
 * For a route whose recorded key was held by another request when it wrote (IdempotencyKeyTaken): settles the
 * key as any other route's is. True when the answer is under way (the holder's, replayed); false when the holder
 * failed since and this request now holds the key the usual way: the route then creates without recording the
 * key, and its answer is stored for it. Throws the refusal (another request's key, one still running).
 */
export function repeatOfTakenKey(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  const recording = recordings.get(request);
  return recording ? recording.settle(request, reply, recording) : Promise.resolve(false);
}

/** Answers of these statuses are stored and replayed; any other lets the key go, so a retry runs again. */
const stored = (status: number) => status >= 200 && status < 300;

/**
 * `Idempotency-Key` on the routes that declare `config: { idempotent: true }`, as one piece: the header and
 * the replay header in their schemas (so in the OpenAPI document), a preHandler that claims the key or
 * replays its answer, and an onSend hook that stores a 2xx answer or lets the key go. Keys are per user (an
 * API key's owner), kept `server.idempotency_ttl_seconds` after their answer. A request without the header
 * does no work here at all beyond one property read. A route with `idempotentRecorded` (the emit) writes its key
 * itself, with what it creates: its preHandler writes nothing, and a repeat is answered from its record.
 *
 * Registered before the routes (its onRoute hook must see them) and before the OpenAPI document.
 */
export function registerIdempotency(
  app: App,
  deps: { store: IdempotencyStore; cfg: () => PlatformConfig; cipher: AnswerCipher },
): void {
  const { store, cfg, cipher } = deps;
  const held = new WeakMap<FastifyRequest, HeldKey>();
  /** Requests of this instance running with a recorded key, by `keyName`, until answered. */
  const recording = new Map<string, Recording>();
  const ttlMs = () => cfg().server.idempotency_ttl_seconds * 1000;

  /**
   * Claims the key (the route runs: false), replays its answer (true: the reply is under way), or throws the
   * refusal. A replay's `send` is not over when this resolves (the onSend hooks are asynchronous), so
   * `reply.sent` cannot say that the route must not run: this answer does.
   */
  const claimOrReplay = async (
    request: FastifyRequest,
    reply: FastifyReply,
    ref: IdempotencyKeyRef,
  ): Promise<boolean> => {
    const fingerprint = fingerprintOf(request);
    const outcome = await settle(store, ref, fingerprint, ttlMs());
    const committed = request.routeOptions.config.idempotentCommitted;
    const replayCommitted = async () => {
      // Only within the key's lifetime: a key forgotten after its TTL creates anew.
      const since = new Date(Date.now() - ttlMs()).toISOString();
      const answer = committed ? await committed(request, idempotencyRef(ref), since) : undefined;
      if (answer !== undefined) reply.code(201).header('idempotent-replayed', 'true').send(answer);
      return answer !== undefined;
    };
    if (outcome.state === 'claimed') {
      // Stored by onSend as the key's answer when what an earlier holder committed is replayed. A key nobody
      // held before (the usual case) has nothing committed under it: no lookup.
      held.set(request, outcome.held);
      return outcome.takenOver && (await replayCommitted());
    }
    if (outcome.fingerprint !== fingerprint) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', undefined, {
        details: { header: 'Idempotency-Key', key: ref.key, reason: 'used before for a different request' },
      });
    }
    if (outcome.state === 'recorded') {
      const recorded = request.routeOptions.config.idempotentRecorded;
      const answer = recorded ? await recorded(request, outcome.owner) : undefined;
      if (answer !== undefined) {
        reply.code(201).header('idempotent-replayed', 'true').send(answer);
        return true;
      }
      // What answered the key is gone (deleted): the key goes with it, and the request runs anew.
      await store.release({ ...ref, owner: outcome.owner });
      return claimOrReplay(request, reply, ref);
    }
    if (outcome.state === 'running') {
      if (await replayCommitted()) return true;
      throw new AppError('IDEMPOTENCY_KEY_IN_PROGRESS', undefined, {
        details: { header: 'Idempotency-Key', key: ref.key, waited_ms: WAIT_MS },
        headers: { 'retry-after': '1' },
      });
    }
    // The first answer, byte for byte (its request_id and timestamp included).
    const body = cipher.open(outcome.body);
    reply.code(outcome.statusCode).header('idempotent-replayed', 'true').type(JSON_TYPE).send(body);
    return true;
  };

  /**
   * A route that records its key: the key goes with what the route writes, no write here. Only another request
   * of this instance with the key is waited for (the key's row comes with its commit), then this one is its
   * repeat; requests on other instances meet in the database (the row's primary key, IdempotencyKeyTaken).
   */
  const recordOrWait = (
    request: FastifyRequest,
    reply: FastifyReply,
    ref: IdempotencyKeyRef,
    url: string,
    done: (err?: Error) => void,
  ): void => {
    const name = keyName(ref);
    const running = recording.get(name);
    if (running === undefined) {
      const own: Recording = {
        scope: ref.scope,
        key: ref.key,
        fingerprint: fingerprintOf(request, url),
        expiresAt: new Date(Date.now() + ttlMs()).toISOString(),
        name,
        settle: claimOrReplay,
        waiting: undefined,
      };
      recording.set(name, own);
      recordings.set(request, own);
      done();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    new Promise<void>((resolve) => {
      running.waiting ??= [];
      running.waiting.push(resolve);
      timer = setTimeout(resolve, WAIT_MS);
    })
      .then(() => {
        clearTimeout(timer);
        return claimOrReplay(request, reply, ref);
      })
      .then(
        (replayed) => {
          if (!replayed) done();
        },
        (err: Error) => done(err),
      );
  };

  // Callback style: a request without the header costs no promise.
  const preHandler = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || !request.principal) {
      done();
      return;
    }
    claimOrReplay(request, reply, { scope: request.principal.userId, key }).then(
      (replayed) => {
        if (!replayed) done();
      },
      (err: Error) => done(err),
    );
  };
  /** The preHandler of a route with `idempotentRecorded`, at `url` (`request.routeOptions` is built on each read). */
  const recordingPreHandler =
    (url: string) =>
    (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
      const key = request.headers['idempotency-key'];
      if (typeof key !== 'string' || !request.principal) {
        done();
        return;
      }
      recordOrWait(request, reply, { scope: request.principal.userId, key }, url, done);
    };

  const keep = async (request: FastifyRequest, reply: FastifyReply, payload: unknown, claim: HeldKey) => {
    held.delete(request);
    try {
      if (stored(reply.statusCode) && typeof payload === 'string')
        await store.complete(claim, reply.statusCode, cipher.seal(payload), ttlMs());
      else await store.release(claim);
    } catch (err) {
      // The answer still goes out; the key stays held until its lease ends, then a retry runs again.
      request.log.error({ err }, 'could not store the answer of an idempotent request');
    }
  };
  // Callback style too: an answer to a request without the header costs no promise.
  const onSend = (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    done: (err: Error | null, payload?: unknown) => void,
  ): void => {
    const recorded = recordings.get(request);
    if (recorded !== undefined) {
      // Answered: the requests of this instance waiting with the key go on (they find its answer, or run).
      recordings.delete(request);
      if (recording.get(recorded.name) === recorded) recording.delete(recorded.name);
      if (recorded.waiting) for (const go of recorded.waiting) go();
    }
    const claim = held.get(request);
    if (!claim) {
      done(null, payload);
      return;
    }
    keep(request, reply, payload, claim).then(() => done(null, payload), done);
  };

  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.config?.idempotent !== true) return;
    route.schema = withIdempotencyHeaders(route.schema ?? {});
    const own = route.config.idempotentRecorded ? recordingPreHandler(route.url) : preHandler;
    route.preHandler = [...[route.preHandler ?? []].flat(), own as never];
    // First of the route's onSend hooks: it must see the serialized answer, before compression.
    route.onSend = [onSend as never, ...[route.onSend ?? []].flat()];
  });
}

/**
 * Claims the key, or waits (bounded) while another request holding it runs: for its answer, or for the key
 * to come free (it failed) and be claimed by this one.
 */
async function settle(
  store: IdempotencyStore,
  ref: IdempotencyKeyRef,
  fingerprint: string,
  ttlMs: number,
): Promise<ClaimOutcome> {
  const times = { ttlMs, leaseMs: LEASE_MS };
  let outcome = await store.claim(ref, fingerprint, times);
  const deadline = Date.now() + WAIT_MS;
  let pause = FIRST_POLL_MS;
  while (outcome.state === 'running' && outcome.fingerprint === fingerprint && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, deadline - Date.now())));
    pause = Math.min(MAX_POLL_MS, pause * 1.5);
    const holder = await store.peek(ref);
    outcome = holder === 'free' ? await store.claim(ref, fingerprint, times) : holder;
  }
  return outcome;
}

/** The digest of a caller's Idempotency-Key that a route stores with what it creates (idempotentCommitted). */
export function idempotencyRef(ref: IdempotencyKeyRef): string {
  return hash('sha256', `${ref.scope}\n${ref.key}`, 'base64url');
}

/** The `idempotencyRef` of a request's Idempotency-Key, or undefined without one. */
export function requestIdempotencyRef(request: FastifyRequest): string | undefined {
  const key = request.headers['idempotency-key'];
  return typeof key === 'string' && request.principal
    ? idempotencyRef({ scope: request.principal.userId, key })
    : undefined;
}

/** What makes two requests the same: method, route, and their parsed input with keys in a stable order. */
function fingerprintOf(request: FastifyRequest, url = request.routeOptions.url ?? ''): string {
  const input = stringify({ params: request.params, query: request.query, body: request.body ?? null });
  // One-shot (no Hash object): about 1 µs against 3 for these short inputs.
  return hash('sha256', `${request.method} ${url}\n${input ?? ''}`, 'base64url');
}

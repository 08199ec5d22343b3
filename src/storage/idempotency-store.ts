import type { Kysely } from 'kysely';
import { newId } from '../kernel/new-id.js';
import type { IdempotencyKeysTable, Tables } from './tables.js';

/** One caller's key: `scope` is whose key space it is (a user id), `key` the header's value. */
export interface IdempotencyKeyRef {
  scope: string;
  key: string;
}

/** A claim this request holds on a key; only its holder may store the answer or let the key go. */
export interface HeldKey extends IdempotencyKeyRef {
  owner: string;
}

/**
 * What holds a key that could not be claimed: a finished request's answer, one still running, or (`recorded`) a
 * key its route wrote in the transaction of what it created (`recordedKeyRow`): its answer is built again from
 * that record, whose id is `owner`.
 */
export type KeyHolder =
  | { state: 'answered'; fingerprint: string; statusCode: number; body: string }
  | { state: 'recorded'; fingerprint: string; owner: string }
  | { state: 'running'; fingerprint: string };

/**
 * A key a route writes itself, in the transaction of what it creates (the event writer's batch), instead of
 * claiming it beforehand and storing the answer afterwards: the key's row (`recordedKeyRow`) is written
 * answered, so a crash can leave the creation without its key or the key without its creation never.
 */
export interface KeyToRecord extends IdempotencyKeyRef {
  fingerprint: string;
  /** When the key expires (`server.idempotency_ttl_seconds` from the request). */
  expiresAt: string;
}

/** Refuses a creation whose key another request holds already (its recorded key's row was there first). */
export class IdempotencyKeyTaken extends Error {
  constructor(readonly ref: IdempotencyKeyRef) {
    super(`the Idempotency-Key '${ref.key}' is held by another request`);
  }
}

/** The columns of a recorded key's row, in the order `recordedKeyRow` gives them. */
export const RECORDED_KEY_COLUMNS = [
  'scope',
  'key',
  'fingerprint',
  'owner',
  'status_code',
  'response_body',
  'locked_until',
  'created_at',
  'expires_at',
] as const;

/**
 * The row of a key recorded with what it created (`owner`, the record's id): answered (status 201), with no
 * stored body (`peek` says `recorded`), held for no lease. Its insert fails on a key already there, with the
 * transaction it is part of.
 */
export function recordedKeyRow(key: KeyToRecord, owner: string, createdAt: string): IdempotencyKeysTable {
  return {
    scope: key.scope,
    key: key.key,
    fingerprint: key.fingerprint,
    owner,
    status_code: 201,
    response_body: null,
    locked_until: null,
    created_at: createdAt,
    expires_at: key.expiresAt,
  };
}

/**
 * Those of `keys` whose row is there (read after a batch with them failed on one). Both columns of the primary
 * key (scope, key) are given, so the read seeks its entries: by `key` alone it would scan every kept key.
 * A caller's other keys that the two lists happen to pair are read too, and left out by name.
 */
export async function existingKeys(
  db: Kysely<Tables>,
  keys: readonly IdempotencyKeyRef[],
): Promise<Set<string>> {
  const found = new Set<string>();
  if (keys.length === 0) return found;
  const wanted = new Set(keys.map(keyName));
  const rows = await db
    .selectFrom('idempotency_keys')
    .select(['scope', 'key'])
    .where('scope', 'in', [...new Set(keys.map((k) => k.scope))])
    .where('key', 'in', [...new Set(keys.map((k) => k.key))])
    .execute();
  for (const r of rows) if (wanted.has(keyName(r))) found.add(keyName(r));
  return found;
}

/** One string per caller's key, for maps and sets. */
export const keyName = (ref: IdempotencyKeyRef): string => `${ref.scope}\n${ref.key}`;

/**
 * `takenOver`: the key was held before, by a request that expired or stopped answering (its process died), which
 * may have committed what it created; false for a key nobody held, whose request cannot have created anything.
 */
export type ClaimOutcome = { state: 'claimed'; held: HeldKey; takenOver: boolean } | KeyHolder;

/**
 * Where `Idempotency-Key`s are kept (src/http/idempotency.ts). The claim is one insert into a primary key, so
 * of several concurrent requests with one key, on any number of instances, exactly one gets it.
 */
export interface IdempotencyStore {
  /**
   * Claims the key for a request whose input hashes to `fingerprint`, or says what holds it. An expired key,
   * or one held by a request that stopped answering (its instance died) for `leaseMs`, is taken over.
   */
  claim(
    ref: IdempotencyKeyRef,
    fingerprint: string,
    times: { ttlMs: number; leaseMs: number },
  ): Promise<ClaimOutcome>;
  /** What holds the key now; undefined once it is free (released, expired, or never used). */
  peek(ref: IdempotencyKeyRef): Promise<KeyHolder | 'free'>;
  /** Stores the answer of the request holding the key; it is replayed for `ttlMs` from now. */
  complete(held: HeldKey, statusCode: number, body: string, ttlMs: number): Promise<void>;
  /** Lets the key go (the request failed), so a retry with it runs again. */
  release(held: HeldKey): Promise<void>;
  /** Deletes up to `limit` expired keys; resolves to how many it deleted. */
  deleteExpired(limit: number): Promise<number>;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Runs writes in a transaction of their own (`Database.unsyncedTransaction` on SQLite with synced commits). */
export type KeyWrites = <T>(work: (db: Kysely<Tables>) => Promise<T>) => Promise<T>;

/**
 * The store on the platform's database, SQLite or PostgreSQL alike (migration 0021). With `unsynced` (SQLite with
 * `sqlite_synchronous = full`) its writes commit without a sync of their own: each keyed request's claim and
 * answer were two synced commits on the server's thread, which capped keyed emits at some 120/s on this disk. No
 * guarantee is lost: the WAL is one file written in order, so the synced commit of what the request creates
 * (the event's batch) makes its earlier claim durable with it; a claim whose request created nothing may be lost
 * with the machine, and so be free again; an answer lost with the machine leaves the key held until its lease
 * ends, as a process that died before answering does (ADR 0011): an emit is then found by its `idempotency_ref`.
 */
export class KyselyIdempotencyStore implements IdempotencyStore {
  private readonly write: KeyWrites;

  constructor(
    private readonly db: Kysely<Tables>,
    unsynced?: KeyWrites,
  ) {
    this.write = unsynced ?? ((work) => work(this.db));
  }

  async claim(
    ref: IdempotencyKeyRef,
    fingerprint: string,
    times: { ttlMs: number; leaseMs: number },
  ): Promise<ClaimOutcome> {
    const owner = newId('idem');
    // A running request's key outlives its lease, so it is never deleted as expired under the request.
    const fresh = () => {
      const now = Date.now();
      return {
        fingerprint,
        owner,
        status_code: null,
        response_body: null,
        locked_until: iso(now + times.leaseMs),
        created_at: iso(now),
        expires_at: iso(now + Math.max(times.ttlMs, times.leaseMs)),
      };
    };
    // A key let go between the insert and the read is claimed again; a few rounds are plenty.
    for (let round = 0; round < 4; round++) {
      const inserted = await this.write((trx) =>
        trx
          .insertInto('idempotency_keys')
          .values({ scope: ref.scope, key: ref.key, ...fresh() })
          .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
          .executeTakeFirst(),
      );
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 1)
        return { state: 'claimed', held: { ...ref, owner }, takenOver: false };
      const now = iso(Date.now());
      // Taken over only while still expired or abandoned: of two requests that both saw so, one updates.
      const taken = await this.write((trx) =>
        trx
          .updateTable('idempotency_keys')
          .set(fresh())
          .where('scope', '=', ref.scope)
          .where('key', '=', ref.key)
          .where((eb) =>
            eb.or([
              eb('expires_at', '<=', now),
              eb.and([eb('status_code', 'is', null), eb('locked_until', '<=', now)]),
            ]),
          )
          .executeTakeFirst(),
      );
      if (Number(taken.numUpdatedRows) === 1)
        return { state: 'claimed', held: { ...ref, owner }, takenOver: true };
      const holder = await this.peek(ref);
      if (holder !== 'free') return holder;
    }
    return { state: 'running', fingerprint };
  }

  async peek(ref: IdempotencyKeyRef): Promise<KeyHolder | 'free'> {
    const row = await this.db
      .selectFrom('idempotency_keys')
      .select(['fingerprint', 'owner', 'status_code', 'response_body', 'locked_until', 'expires_at'])
      .where('scope', '=', ref.scope)
      .where('key', '=', ref.key)
      .executeTakeFirst();
    const now = iso(Date.now());
    if (!row || row.expires_at <= now) return 'free';
    if (row.status_code !== null && row.response_body !== null)
      return {
        state: 'answered',
        fingerprint: row.fingerprint,
        statusCode: row.status_code,
        body: row.response_body,
      };
    if (row.status_code !== null)
      return { state: 'recorded', fingerprint: row.fingerprint, owner: row.owner };
    if (row.locked_until !== null && row.locked_until <= now) return 'free';
    return { state: 'running', fingerprint: row.fingerprint };
  }

  async complete(held: HeldKey, statusCode: number, body: string, ttlMs: number): Promise<void> {
    await this.write((trx) =>
      trx
        .updateTable('idempotency_keys')
        .set({
          status_code: statusCode,
          response_body: body,
          locked_until: null,
          expires_at: iso(Date.now() + ttlMs),
        })
        .where('scope', '=', held.scope)
        .where('key', '=', held.key)
        .where('owner', '=', held.owner)
        .execute(),
    );
  }

  async release(held: HeldKey): Promise<void> {
    await this.write((trx) =>
      trx
        .deleteFrom('idempotency_keys')
        .where('scope', '=', held.scope)
        .where('key', '=', held.key)
        .where('owner', '=', held.owner)
        .execute(),
    );
  }

  async deleteExpired(limit: number): Promise<number> {
    const now = iso(Date.now());
    // Unsynced as the claims (SQLite): a deletion lost with the machine is done again by the next run.
    const result = await this.write((db) =>
      db
        .deleteFrom('idempotency_keys')
        .where((eb) =>
          eb(
            eb.refTuple('scope', 'key'),
            'in',
            eb
              .selectFrom('idempotency_keys')
              .select(['scope', 'key'])
              .where('expires_at', '<=', now)
              .limit(limit)
              .$asTuple('scope', 'key'),
          ),
        )
        .executeTakeFirst(),
    );
    return Number(result.numDeletedRows);
  }
}

import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { createRequire } from 'node:module';
import { isIP, type Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { buildConnector } from 'undici';

/** A webhook target refused because it is (or resolves to) an address the platform must not reach. */
export class TargetRefusedError extends Error {
  readonly code = 'ERR_WEBHOOK_TARGET_REFUSED';

  constructor(
    readonly address: string,
    readonly kind: string,
    host?: string,
  ) {
    super(
      `target ${host && host !== address ? `${host} (${address})` : address} is a ${kind} address; ` +
        'refused because webhooks.allow_private_targets is off',
    );
    this.name = 'TargetRefusedError';
  }
}

const METADATA = new Set(['169.254.169.254', 'fd00:ec2::254']);

/**
 * Why an address may not be a webhook target, or undefined when it may. Only public unicast addresses pass:
 * loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), carrier-grade NAT (100.64/10), link-local
 * (169.254/16, fe80::/10), cloud metadata, unspecified, multicast, reserved, IPv4-mapped and the IPv6
 * transition ranges that embed an IPv4 address (NAT64, 6to4, Teredo) are refused.
 */
export function refusedKind(address: string): string | undefined {
  const text = address.startsWith('[') ? address.slice(1, -1) : address;
  if (isIP(text) === 0) return 'unparseable';
  const parsed = ipaddr.parse(text);
  const canonical = parsed.kind() === 'ipv6' ? (parsed as ipaddr.IPv6).toNormalizedString() : text;
  if (METADATA.has(text) || METADATA.has(canonical) || METADATA.has(parsed.toString())) return 'metadata';
  const range = parsed.range();
  // IPv4-compatible IPv6 (`::a.b.c.d`, ::/96, deprecated by RFC 4291) embeds an IPv4 address too; ipaddr.js
  // calls it unicast. `::` and `::1` have ranges of their own.
  if (
    range === 'unicast' &&
    parsed.kind() === 'ipv6' &&
    (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)
  ) {
    return 'IPv4-compatible IPv6';
  }
  if (range === 'unicast') return undefined;
  const names: Record<string, string> = {
    loopback: 'loopback',
    private: 'private',
    uniqueLocal: 'private',
    carrierGradeNat: 'private (carrier-grade NAT)',
    linkLocal: 'link-local',
    unspecified: 'unspecified',
    ipv4Mapped: 'IPv4-mapped IPv6',
  };
  return names[range] ?? range;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `dns.lookup` replacement for sockets: every address a name resolves to is checked, and one refused
 * address refuses them all, so a name cannot mix a public answer with a private one.
 */
export function guardedLookup(allow: () => boolean) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { family: options.family ?? 0, all: true }, (err, addresses) => {
      if (err) {
        callback(err, []);
        return;
      }
      if (!allow()) {
        for (const a of addresses) {
          const kind = refusedKind(a.address);
          if (kind !== undefined) {
            callback(new TargetRefusedError(a.address, kind, hostname) as NodeJS.ErrnoException, []);
            return;
          }
        }
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]?.address ?? '', addresses[0]?.family ?? 4);
    });
  };
}

/**
 * An undici connector that refuses private targets twice: at resolution (every address of the name), and on
 * the socket actually connected (`remoteAddress`), which also covers IP literals and anything the resolver
 * was bypassed for. So DNS rebinding between a check and the connection cannot reach a private address.
 */
export function guardedConnector(allow: () => boolean, connectTimeoutMs: number): buildConnector.connector {
  const { buildConnector } = createRequire(import.meta.url)('undici') as typeof import('undici');
  const base = buildConnector({
    // Node's net/tls take a lookup function with this shape; the undici type does not name the option.
    ...({ lookup: guardedLookup(allow) } as object),
    timeout: connectTimeoutMs,
    keepAlive: true,
  });
  return (options, callback) => {
    // An IP literal is never looked up: refuse it before any packet is sent.
    const literal = options.hostname.replace(/^\[|\]$/g, '');
    const literalKind = isIP(literal) !== 0 && !allow() ? refusedKind(literal) : undefined;
    if (literalKind !== undefined) {
      callback(new TargetRefusedError(literal, literalKind), null);
      return;
    }
    base(options, (err, socket) => {
      if (err || !socket) {
        callback(err ?? new Error('connection failed'), null);
        return;
      }
      if (!allow()) {
        const remote = (socket as Socket).remoteAddress ?? '';
        const kind = refusedKind(remote);
        if (kind !== undefined) {
          socket.destroy();
          callback(new TargetRefusedError(remote, kind, options.hostname), null);
          return;
        }
      }
      callback(null, socket);
    });
  };
}

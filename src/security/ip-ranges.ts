import type { IncomingHttpHeaders } from 'node:http';
import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface IpRange {
  /** The network address, in its canonical spelling (`10.0.0.0`, `2001:db8::`). */
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
  /** `address/prefix`, the one spelling stored and compared. */
  cidr: string;
}

/**
 * Parses `203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32` into one canonical range; undefined when it is neither
 * an address nor a range. Host bits are cleared (`10.0.0.5/24` → `10.0.0.0/24`) and IPv4-mapped IPv6 forms
 * (`::ffff:1.2.3.4`, `::ffff:1.2.3.0/120`) become their IPv4 range, so each range has exactly one spelling.
 */
export function parseCidr(value: string): IpRange | undefined {
  const [text = '', prefixText, ...rest] = value.trim().split('/');
  // node:net is strict (no `127.1` or octal forms, which ipaddr.js would accept); ipaddr.js does the arithmetic.
  const version = isIP(text);
  if (version === 0 || rest.length > 0) return undefined;
  const max = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^(0|[1-9]\d{0,2})$/.test(prefixText)) return undefined;
  let prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  let address = ipaddr.parse(text);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).zoneId) return undefined;
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && prefix >= 96) {
    address = (address as ipaddr.IPv6).toIPv4Address();
    prefix -= 96;
  }
  const network = networkOf(address, prefix);
  return { address: network, prefix, family: address.kind(), cidr: `${network}/${prefix}` };
}

function networkOf(address: ipaddr.IPv4 | ipaddr.IPv6, prefix: number): string {
  const bytes = address.toByteArray();
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    bytes[i] = (bytes[i] ?? 0) & ((0xff << (8 - keep)) & 0xff);
  }
  const network = ipaddr.fromByteArray(bytes);
  return network.kind() === 'ipv6' ? (network as ipaddr.IPv6).toRFC5952String() : network.toString();
}

/** How a range is shown: a bare address for a single host, else `address/prefix`. */
export function displayRange(range: Pick<IpRange, 'address' | 'prefix' | 'family'>): string {
  return range.prefix === (range.family === 'ipv4' ? 32 : 128)
    ? range.address
    : `${range.address}/${range.prefix}`;
}

/** Strips the IPv4-mapped IPv6 form (`::ffff:1.2.3.4`) so one rule covers both spellings. */
export function normalizeIp(ip: string): string {
  if (isIP(ip) !== 6) return ip;
  const parsed = ipaddr.IPv6.parse(ip);
  return parsed.isIPv4MappedAddress() ? parsed.toIPv4Address().toString() : ip;
}

export function buildBlockList(ranges: readonly string[]): BlockList {
  const list = new BlockList();
  for (const r of ranges) {
    const parsed = parseCidr(r);
    if (parsed) list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return list;
}

export function matches(list: BlockList, ip: string): boolean {
  const address = normalizeIp(ip);
  const version = isIP(address);
  if (version === 0) return false;
  return list.check(address, version === 4 ? 'ipv4' : 'ipv6');
}

/**
 * `X-Forwarded-For` entries as some proxies write them, with a port (`203.0.113.7:5555`, `[2001:db8::1]:5555`),
 * rewritten to the addresses alone, in place, before anything reads the client address: otherwise such an
 * entry is taken as it is, matching no block and getting a rate-limit bucket per port.
 */
export function stripForwardedPorts(headers: IncomingHttpHeaders): void {
  const value = headers['x-forwarded-for'];
  // Most values hold no colon at all (IPv4 without ports): nothing to do.
  if (typeof value !== 'string' || !value.includes(':')) return;
  headers['x-forwarded-for'] = value
    .split(',')
    .map((entry) => {
      const e = entry.trim();
      return BRACKETED_V6.exec(e)?.[1] ?? V4_WITH_PORT.exec(e)?.[1] ?? e;
    })
    .join(', ');
}

const BRACKETED_V6 = /^\[([0-9A-Fa-f:.]+)\](?::\d{1,5})?$/;
const V4_WITH_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/;

/**
 * The trust test for `X-Forwarded-For` (Fastify's `trustProxy` function form): a hop is believed only when it
 * is one of the configured proxies (addresses or CIDR ranges). The list is read on every call, so a config
 * change applies without a restart; the compiled form is kept until the list changes.
 */
export function proxyTrust(proxies: () => readonly string[]): (address: string, hop: number) => boolean {
  let source: readonly string[] | undefined;
  let list: BlockList | undefined;
  return (address) => {
    const current = proxies();
    if (current.length === 0) return false;
    if (current !== source || !list) {
      source = current;
      list = buildBlockList(current);
    }
    return matches(list, address);
  };
}

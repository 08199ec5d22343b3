import { BlockList, isIP } from 'node:net';

/** Parses `203.0.113.7`, `203.0.113.0/24`, `2001:db8::/32`; undefined when it is neither an address nor a range. */
export function parseCidr(
  value: string,
): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [address = '', prefixText] = value.trim().split('/');
  const version = isIP(address);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (
    !Number.isInteger(prefix) ||
    prefix < 0 ||
    prefix > max ||
    (prefixText !== undefined && !/^\d+$/.test(prefixText))
  ) {
    return undefined;
  }
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** Strips the IPv4-mapped IPv6 form (`::ffff:1.2.3.4`) so one rule covers both spellings. */
export function normalizeIp(ip: string): string {
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
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

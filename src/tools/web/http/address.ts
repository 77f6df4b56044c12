import { isIPv4, isIPv6 } from 'node:net';

/**
 * IPv4 ranges a fetch chosen by a model must never reach: this host, private networks, link-local
 * (including the 169.254.169.254 cloud metadata service), carrier-grade NAT, multicast and reserved space.
 * Each entry is `[network, prefix length, what it is]`.
 */
const BLOCKED_V4: readonly (readonly [string, number, string])[] = [
  ['0.0.0.0', 8, 'a "this network" address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a carrier-grade NAT address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local or cloud metadata address'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
];

function v4ToNumber(address: string): number {
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
}

function v4Reason(address: string): string | undefined {
  const value = v4ToNumber(address);
  for (const [network, bits, reason] of BLOCKED_V4) {
    const size = 2 ** (32 - bits);
    const start = v4ToNumber(network);
    if (value >= start && value < start + size) return reason;
  }
  return undefined;
}

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted quad is folded into the last two). */
function v6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const value = v4ToNumber(quad[1]!);
    text = `${text.slice(0, quad.index)}${(value >>> 16).toString(16)}:${(value & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) =>
    part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function groupsToV4(high: number, low: number): string {
  return [high >>> 8, high & 0xff, low >>> 8, low & 0xff].join('.');
}

function v6Reason(address: string): string | undefined {
  const groups = v6Groups(address);
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const firstSixZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (firstSixZero && g5 === 0 && g6 === 0 && g7 === 0) return 'the unspecified address';
  if (firstSixZero && g5 === 0 && g6 === 0 && g7 === 1) return 'a loopback address';
  // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) addresses reach the embedded IPv4 address.
  if (firstSixZero && (g5 === 0xffff || g5 === 0)) return v4Reason(groupsToV4(g6, g7));
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) also embed an IPv4 address that the packet may end up at.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0)
    return v4Reason(groupsToV4(g6, g7));
  if (g0 === 0x2002) return v4Reason(groupsToV4(g1, g2));
  if ((g0 & 0xfe00) === 0xfc00) return 'a unique-local (private) address';
  if ((g0 & 0xffc0) === 0xfe80) return 'a link-local address';
  if ((g0 & 0xffc0) === 0xfec0) return 'a site-local (private) address';
  if ((g0 & 0xff00) === 0xff00) return 'a multicast address';
  return undefined;
}

/**
 * Why `address` (an IPv4 or IPv6 literal, without brackets) must not be fetched on a model's behalf — e.g.
 * `'a loopback address'` — or `undefined` when it is a public address. Anything that is not an IP literal
 * is refused too, so a caller cannot mistake a hostname for a checked address.
 *
 * @example
 * blockedAddressReason('169.254.169.254'); // 'a link-local or cloud metadata address'
 * blockedAddressReason('::ffff:127.0.0.1'); // 'a loopback address'
 * blockedAddressReason('93.184.216.34'); // undefined
 */
export function blockedAddressReason(address: string): string | undefined {
  if (isIPv4(address)) return v4Reason(address);
  if (isIPv6(address)) return v6Reason(address);
  return 'not an IP address';
}

// Which proxy, if any, the API server is reached through, decided from the environment by the rules
// client-go applies (Go's net/http ProxyFromEnvironment, golang.org/x/net/http/httpproxy), so that
// one environment sends pvx and kubectl the same way:
//
//   - HTTPS_PROXY (then https_proxy) for an https URL, HTTP_PROXY (then http_proxy) for http;
//     a value without a scheme ("proxy:3128") means http://proxy:3128;
//   - "localhost" and loopback addresses are never proxied;
//   - NO_PROXY (then no_proxy): comma-separated, case-insensitive; "*" exempts everything; an IP
//     address or a CIDR range (10.0.0.0/8: a pod's Service network) exempts addresses; a domain
//     exempts itself and its subdomains, ".domain" and "*.domain" only its subdomains; an IP or a
//     domain may carry a port, which must then match (443/80 when the URL names none).
//
// Node's own proxy support (http.Agent's proxyEnv) reads NO_PROXY differently — no CIDR ranges —
// so a pod whose NO_PROXY names the Service network would send the API server's traffic to the
// proxy. pvx decides here and hands Node only the proxy to use, or none.
import { BlockList, isIP } from 'node:net';

/** The proxy for `url` under `env`, or undefined to connect directly. Throws for a proxy pvx cannot speak to. */
export function proxyFor(url: URL, env: NodeJS.ProcessEnv): URL | undefined {
  const secure = url.protocol === 'https:';
  const variable = secure ? pick(env, 'HTTPS_PROXY', 'https_proxy') : pick(env, 'HTTP_PROXY', 'http_proxy');
  if (!variable) return undefined;
  const host = hostOf(url);
  const port = url.port || (secure ? '443' : '80');
  if (host === 'localhost' || isLoopback(host)) return undefined;
  if (exempt(host, port, pick(env, 'NO_PROXY', 'no_proxy')?.value ?? '')) return undefined;
  const proxy = parseProxy(variable.value);
  if (!proxy || (proxy.protocol !== 'http:' && proxy.protocol !== 'https:')) {
    const shown = proxy ? `${proxy.protocol}//${proxy.host}` : variable.value.replace(/\/\/[^@/]*@/, '//');
    throw new TypeError(
      `${variable.name}=${shown}: pvx speaks to HTTP and HTTPS proxies only${proxy ? ` (${proxy.protocol} is not one)` : ''}; set NO_PROXY to reach ${host} directly, or give an HTTP proxy`,
    );
  }
  return proxy;
}

/** The first of two variables that is set and not empty, with its name (Go reads the upper-case one first). */
function pick(env: NodeJS.ProcessEnv, upper: string, lower: string): { name: string; value: string } | undefined {
  for (const name of [upper, lower]) {
    const value = env[name]?.trim();
    if (value) return { name, value };
  }
  return undefined;
}

/** A proxy URL; "host:port" without a scheme is http, as Go reads it. */
function parseProxy(value: string): URL | undefined {
  for (const text of /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? [value] : [`http://${value}`]) {
    try {
      const url = new URL(text);
      if (url.hostname) return url;
    } catch {
      // not a URL
    }
  }
  return undefined;
}

/** The URL's host in lower case, an IPv6 address without its brackets. */
const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();

function isLoopback(host: string): boolean {
  const family = isIP(host);
  if (family === 4) return host.startsWith('127.');
  if (family === 6) {
    const loopback = new BlockList();
    loopback.addAddress('::1', 'ipv6');
    loopback.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
    return loopback.check(host, 'ipv6');
  }
  return false;
}

/** Whether NO_PROXY exempts host:port. */
function exempt(host: string, port: string, noProxy: string): boolean {
  const family = isIP(host);
  for (const raw of noProxy.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    const cidr = /^(.+)\/(\d{1,3})$/.exec(entry);
    if (cidr) {
      const [, base = '', bits] = cidr;
      const baseFamily = isIP(base);
      // A range that does not parse (10.0.0.0/99) matches nothing, as Go's ParseCIDR leaves it: never a crash.
      if (family !== 0 && baseFamily === family && Number(bits) <= (family === 4 ? 32 : 128)) {
        const range = new BlockList();
        range.addSubnet(base, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
        if (range.check(host, family === 4 ? 'ipv4' : 'ipv6')) return true;
      }
      continue;
    }
    const [entryHost, entryPort] = splitPort(entry);
    if (entryPort && entryPort !== port) continue;
    if (isIP(entryHost)) {
      if (family !== 0 && sameAddress(entryHost, host)) return true;
      continue;
    }
    // "*.example.com" and ".example.com": subdomains only; "example.com": itself and its subdomains.
    const domain = entryHost.replace(/^\*?\./, '');
    const subdomainsOnly = entryHost.startsWith('.') || entryHost.startsWith('*.');
    if (host.endsWith(`.${domain}`) || (!subdomainsOnly && host === domain)) return true;
  }
  return false;
}

/** "host:port", "[v6]:port", or a bare host (an IPv6 address without brackets is all host). */
function splitPort(entry: string): [string, string | undefined] {
  const bracketed = /^\[(.*)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return [bracketed[1] ?? '', bracketed[2]];
  if (isIP(entry) === 6) return [entry, undefined];
  const m = /^(.*):(\d+)$/.exec(entry);
  return m ? [m[1] ?? '', m[2]] : [entry, undefined];
}

function sameAddress(a: string, b: string): boolean {
  const family = isIP(a);
  if (family !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(a, family === 4 ? 'ipv4' : 'ipv6');
  return list.check(b, family === 4 ? 'ipv4' : 'ipv6');
}

// oidc-provider makes every absolute URL it publishes or redirects to (the endpoints in the discovery
// documents, the resume address an interaction returns to) from the request in front of it: koa's ctx.href,
// built from the Host header (X-Forwarded-Host and -Proto once proxy headers are trusted), or the request
// line itself when it names a whole URL. A client could thus pick the host our metadata pointed to, and a
// Host that is no valid authority (`a b`, `[::1`) made the URL constructor throw: a 500.
//
// Our public address is configured (BASE_URL), so the requests oidc-provider sees carry it instead: their
// protocol and host are BASE_URL's, whatever was sent. Only koa's view changes; the headers stay as they
// came, so express's req.ip (rate limits, audit) and the access log read what they always read. Session
// cookies follow BASE_URL too: Secure when it is https, as the service's own cookies already are.
import type Provider from 'oidc-provider';

export function pinPublicOrigin(provider: Provider, baseUrl: string): void {
  const { protocol, host } = new URL(baseUrl);
  const scheme = protocol.slice(0, -1);
  // `provider.request` is koa's prototype of every request object oidc-provider makes (callback() and
  // createContext() alike); the request's `secure` and `hostname` derive from these.
  Object.defineProperties(provider.request, {
    protocol: { get: () => scheme },
    host: { get: () => host },
    // koa returns an absolute request target (`GET http://evil.example/x HTTP/1.1`) as it came.
    href: {
      get(this: { path: string; search: string }) {
        return `${scheme}://${host}${this.path}${this.search}`;
      },
    },
  });
}

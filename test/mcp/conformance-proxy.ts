import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback proxy in front of `/mcp` that adds `Authorization: Bearer <token>` to every request: the
 * conformance runner connects to a URL and sends no credentials of its own.
 */
export async function authorizingProxy(
  target: string,
  token: string,
): Promise<{ url: string; server: Server }> {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const forwarded = request(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        path: upstream.pathname,
        method: req.method,
        headers: { ...req.headers, host: upstream.host, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}

// A fetch for URLs someone other than the operator chose: the caller has the host's address vetted by the
// address guard (address-guard.ts), and the connection is pinned to that address through its own lookup, so
// nothing but the checked address is ever connected to (no second DNS answer is asked for). Redirects are
// never followed, whatever the caller asks: a 3xx comes back as it is, since following it would connect to
// a host nobody vetted. The whole request is bounded in time, and the answer in size; the body is read
// here, so the connection is closed before the caller parses it.
import type { VettedAddress } from './address-guard.ts';

export interface PinnedFetchLimits {
  /** The whole request, connection to last byte. */
  timeoutMs: number;
  /** The largest answer read; a longer one is refused without reading the rest. */
  maxBytes: number;
}

/** The parts of a fetch request a guarded caller may set (no redirect mode, no dispatcher). */
export interface PinnedRequest {
  method?: string;
  headers?: Record<string, string> | Headers;
  body?: string | URLSearchParams | Uint8Array | ArrayBuffer | ReadableStream | null;
  signal?: AbortSignal | null;
}

/** An answer over the size limit: the request fails, and the rest is not read. */
class AnswerTooLarge extends Error {
  constructor(maxBytes: number) {
    super(`the answer is larger than ${maxBytes} bytes`);
    this.name = 'AnswerTooLarge';
  }
}

/** Statuses whose answer has no body: a Response carrying one cannot be constructed. */
const NULL_BODY = new Set([204, 205, 304]);

/** `url` fetched from `pinned`, the address vetAddress gave for its host. */
export async function pinnedFetch(
  url: URL,
  pinned: VettedAddress,
  init: PinnedRequest,
  limits: PinnedFetchLimits,
): Promise<Response> {
  // undici (for a connection pinned to the vetted address) is loaded with the first guarded fetch: most
  // instances never make one, and it is about 1 MB of source the service would otherwise keep.
  const { Agent, fetch: undiciFetch } = await import('undici');
  const dispatcher = new Agent({
    connect: {
      lookup: (_hostname, _options, callback) =>
        callback(null, [{ address: pinned.address, family: pinned.family }] as never, pinned.family),
      ...(pinned.local ? { rejectUnauthorized: false } : {}),
    },
    connections: 1,
  });
  const signal = AbortSignal.any([
    AbortSignal.timeout(limits.timeoutMs),
    ...(init.signal ? [init.signal] : []),
  ]);
  try {
    const response = await undiciFetch(url, {
      method: init.method ?? 'GET',
      headers: init.headers as never,
      body: (init.body ?? undefined) as never,
      ...(init.body instanceof ReadableStream ? { duplex: 'half' } : {}),
      redirect: 'manual',
      signal,
      dispatcher,
    });
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > limits.maxBytes) throw new AnswerTooLarge(limits.maxBytes);
    const chunks: Uint8Array[] = [];
    let received = 0;
    for await (const chunk of response.body ?? []) {
      received += chunk.length;
      if (received > limits.maxBytes) throw new AnswerTooLarge(limits.maxBytes);
      chunks.push(chunk);
    }
    // The body is already decoded (gzip, br): its length and encoding headers no longer describe it.
    const headers = new Headers(response.headers as never);
    headers.delete('content-encoding');
    headers.delete('content-length');
    return new Response(NULL_BODY.has(response.status) ? null : Buffer.concat(chunks), {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  } finally {
    void dispatcher.destroy().catch(() => {});
  }
}

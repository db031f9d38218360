import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { canConnect } from '../support/ports.ts';
import { startTestService } from '../support/service.ts';
import { useService } from '../support/suite.ts';

const service = useService();

/** Sends raw bytes and resolves with everything the server answers until it closes the connection. */
function rawRequest(port: number) {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString();
  });
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  const ready = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, ready, closed };
}

describe('service lifecycle', () => {
  it('reports liveness and database readiness, with a request id', async () => {
    const health = await fetch(`${service.url}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`${service.url}/readyz`, { headers: { 'x-request-id': 'trace-me-1' } });
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok', database: 'ok' });
    expect(ready.headers.get('x-request-id')).toBe('trace-me-1');
  });

  it('shuts down gracefully: stops accepting, finishes the request in flight, then closes', async () => {
    const other = await startTestService({}, { database: service.database });
    const inFlight = rawRequest(other.port);
    await inFlight.ready;
    inFlight.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n'); // headers not finished yet

    const stopped = other.stop();
    expect(await canConnect(other.port)).toBe(false);

    inFlight.socket.write('Connection: close\r\n\r\n');
    const answer = await inFlight.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(answer).toContain('{"status":"ok"}');
    await stopped;
  });
});

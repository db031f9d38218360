import { connect } from 'node:net';

/**
 * Sends raw bytes to the service on a connection of its own and returns what came back before the service
 * closed it: for what a client library would not send (malformed HTTP, a body that never comes).
 */
export function rawExchange(
  port: number,
  request: string,
): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = received.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body });
    });
  });
}

import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';

/** A DNS server on loopback that answers TXT questions from `records`; everything else finds nothing. */
export interface TxtServer {
  /** TXT values by lower-case name; tests publish and change records here. */
  records: Map<string, string>;
  /** `127.0.0.1:<port>`, the service's DNS_SERVERS setting. */
  address: string;
  close(): Promise<void>;
}

/** Domain verification asks this server rather than the machine's resolvers (DNS_SERVERS). */
export async function startTxtServer(): Promise<TxtServer> {
  const records = new Map<string, string>();
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = dns2.Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const value = question ? records.get(question.name.toLowerCase()) : undefined;
      if (question && value)
        response.answers.push({
          name: question.name,
          type: dns2.Packet.TYPE.TXT,
          class: dns2.Packet.CLASS.IN,
          ttl: 1,
          data: value,
        } as never);
      send(response);
    },
  });
  const listening = (await server.listen({ udp: { port: 0, address: '127.0.0.1' } })) as { udp: AddressInfo };
  return {
    records,
    address: `127.0.0.1:${listening.udp.port}`,
    close: async () => {
      await server.close();
    },
  };
}

/**
 * The HTTP figures' client, in a process of its own (forked by `http.ts`): a real service's clients
 * do not run on its event loop. Per round it gets the host's URL, runs `clientRound`, and answers
 * with the round's times and, when asked, every text delta's arrival time (`epochNow`, the clock the
 * host's model stamps with).
 */
import { clientRound, epochNow, fetchClient, nodeHttpClient, type ClientKind, type ClientRoundOptions, type ClientRoundTimes } from './http-client.js';
import { messageOf } from '../src/protocol/error-message.js';

export interface RoundRequest {
  base: string;
  options: ClientRoundOptions;
  clientKind: ClientKind;
  recordDeltas: boolean;
}

/** `[sessionId, text, arrivedAt]` per text delta. */
export type DeltaArrival = [string, string, number];

export type RoundReply = ({ ok: true; arrivals: DeltaArrival[] } & ClientRoundTimes) | { ok: false; message: string };

async function runRound(request: RoundRequest): Promise<RoundReply> {
  const client = request.clientKind === 'fetch' ? fetchClient(request.base) : nodeHttpClient(request.base);
  const arrivals: DeltaArrival[] = [];
  const onDelta = request.recordDeltas ? (sessionId: string, text: string) => arrivals.push([sessionId, text, epochNow()]) : () => undefined;
  try {
    return { ok: true, arrivals, ...(await clientRound(client, request.options, onDelta)) };
  } catch (error) {
    client.close();
    return { ok: false, message: messageOf(error) };
  }
}

process.on('message', (request: RoundRequest | 'exit') => {
  if (request === 'exit') {
    process.disconnect();
    return;
  }
  void runRound(request).then((reply) => process.send!(reply));
});

/**
 * The HTTP figures' client, in a process of its own (forked by `http.ts`): a real service's clients
 * do not run on its event loop. Per round it gets the host's URL, runs `clientRound`, says when the
 * round's last `turn_finished` has arrived (`RoundFinished`), then answers with the round's times
 * and, when asked, every text delta's arrival time (`epochNow`, the clock the host's model stamps
 * with), once its streams are closed.
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

/**
 * Sent the moment the round's work is done, before the reply: the round ends there, not after
 * the client has closed its 50 streams and the arrivals have crossed to the host (5–8 ms a round).
 */
export type RoundFinished = { finished: true } & ClientRoundTimes;

async function runRound(request: RoundRequest): Promise<RoundReply> {
  const client = request.clientKind === 'fetch' ? fetchClient(request.base) : nodeHttpClient(request.base);
  const arrivals: DeltaArrival[] = [];
  const onDelta = request.recordDeltas ? (sessionId: string, text: string) => arrivals.push([sessionId, text, epochNow()]) : () => undefined;
  try {
    const finished = (times: ClientRoundTimes) => process.send!({ finished: true, ...times } satisfies RoundFinished);
    return { ok: true, arrivals, ...(await clientRound(client, request.options, onDelta, finished)) };
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

import { createActor, fromCallback, fromPromise, type Actor, type EventObject } from 'xstate';
import {
  failureOf,
  type ChatCommand,
  type ChatNotice,
  type CommandResult,
  type FeedEvent as ChartFeedEvent,
  type FeedInput,
  type RequestReply,
  type TurnRef,
} from '../../machines/chat-client.effects.js';
import { chatClientMachine, type ChatClientInput } from '../../machines/chat-client.machine.js';
import { withDeadline } from '../util/deadline.js';
import { asChatError, type ChatClient, type FeedEvent } from './chat-client.js';
import { EMPTY_VIEW, render, screenOf, type RenderView } from './chat-render.js';
import type { Screen } from './chat-screen.js';

/** How long a tool call's arguments are looked for before its line is printed without them. */
const ARGUMENTS_LOOKUP_MS = 2_000;

/** How many sessions `/sessions` lists. */
const SESSIONS_LISTED = 20;

/**
 * The chat chart (`machines/chat-client.machine.ts`) with its effects: the backend's calls, the
 * session's feed, and the screen. Everything the chart says goes through the pure renderer; the
 * only state kept here is what the output shows (an open streamed line, the names of running tool
 * calls), which only the renderer reads.
 */
function chatMachine(client: ChatClient, screen: Screen) {
  let view: RenderView = EMPTY_VIEW;
  const style = { paint: screen.paint, color: screen.color };
  /** Runs a backend call; anything it throws becomes a `ChatError` with a code. */
  const call = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw asChatError(error);
    }
  };

  return chatClientMachine.provide({
    actors: {
      openSession: fromPromise(({ input }) =>
        call(async () => {
          const info =
            input.sessionId === null
              ? await client.createSession({ ...(input.permissionMode && { permissionMode: input.permissionMode }), ...(input.agent !== null && { agent: input.agent }) })
              : await client.openSession(input.sessionId);
          return { sessionId: info.sessionId, permissionMode: info.snapshot.permissionMode, created: input.sessionId === null, agent: info.agent ?? null };
        }),
      ),
      feed: fromCallback<EventObject, FeedInput>(({ input, sendBack }) => {
        // One event at a time, in order, even while a tool call's arguments are looked up.
        let closed = false;
        let queue = Promise.resolve();
        const deliver = async (event: FeedEvent): Promise<void> => {
          const chartEvent = await feedEvent(client, input.sessionId, event);
          if (!closed) sendBack(chartEvent);
        };
        const feed = client.follow(input.sessionId, (event) => {
          queue = queue.then(() => (closed ? undefined : deliver(event))).catch(() => undefined);
        });
        // Its refusal comes as the feed's own `ended` or `connection_lost` event.
        feed.ready.catch(() => undefined);
        return () => {
          closed = true;
          feed.close();
        };
      }),
      startTurn: fromPromise(({ input }) =>
        call(() => client.submitTurn(input.sessionId, { clientRequestId: input.clientRequestId, input: [{ type: 'text', text: input.text }] })),
      ),
      resolvePermission: fromPromise(({ input }) =>
        call(async () => {
          await client.resolvePermission(input.sessionId, { turnId: input.turnId, toolCallId: input.toolCallId, decision: input.decision });
        }),
      ),
      runCommand: fromPromise(({ input }) => call(() => runCommand(client, input))),
      closeClient: fromPromise(() => call(() => client.close())),
    },
    actions: {
      show: (_, notice: ChatNotice) => {
        const rendered = render(notice, view, style);
        view = rendered.view;
        screen.print(rendered.print);
      },
      // Both answer the chart by event, unless the chat has ended meanwhile.
      requestCancel: ({ self }, { sessionId, turnId }: TurnRef) => {
        client.cancelTurn(sessionId, turnId).catch((error: unknown) => tell(self, { type: 'cancel.refused', turnId, error: failureOf(asChatError(error)) }));
      },
      requestTurnStatus: ({ self }, { sessionId, turnId }: TurnRef) => {
        client.turnStatus(sessionId, turnId).then(
          (state) => tell(self, { type: 'turn_status.received', turnId, outcome: state.outcome ?? null }),
          (error: unknown) => tell(self, { type: 'turn_status.failed', turnId, error: failureOf(asChatError(error)) }),
        );
      },
    },
  });
}

function tell(actor: { send(event: RequestReply): void; getSnapshot(): { status: string } }, event: RequestReply): void {
  if (actor.getSnapshot().status === 'active') actor.send(event);
}

async function runCommand(client: ChatClient, command: ChatCommand): Promise<CommandResult> {
  switch (command.kind) {
    case 'list_sessions':
      return { kind: 'sessions_listed', sessions: await client.listSessions(SESSIONS_LISTED) };
    case 'list_agents':
      return { kind: 'agents_listed', agents: await client.listAgents() };
    case 'set_mode':
      await client.setPermissionMode(command.sessionId, command.mode);
      return { kind: 'mode_set', mode: command.mode };
    case 'compact':
      return { kind: 'compacted', compactionId: (await client.compactConversation(command.sessionId)).compactionId };
    case 'read_context':
      return { kind: 'context_read', usage: await client.context(command.sessionId) };
  }
}

/** A feed's event as the chart's; a started tool call's with its arguments, looked up for a while. */
async function feedEvent(client: ChatClient, sessionId: string, event: FeedEvent): Promise<ChartFeedEvent> {
  switch (event.kind) {
    case 'snapshot':
      return { type: 'feed.snapshot_received', snapshot: event.snapshot, resumed: event.resumed };
    case 'update': {
      const { update } = event.envelope;
      if (update.type !== 'tool_call_started') return { type: 'feed.update_received', envelope: event.envelope, call: null };
      const found = await withDeadline(
        client.toolCall(sessionId, update.toolCallId).catch(() => null),
        ARGUMENTS_LOOKUP_MS,
        () => null,
      );
      return { type: 'feed.update_received', envelope: event.envelope, call: found ? { argumentsText: found.argumentsText } : null };
    }
    case 'connection_lost':
      return { type: 'feed.connection_lost', error: failureOf(event.error) };
    case 'connection_restored':
      return { type: 'feed.connection_restored' };
    case 'ended':
      return { type: 'feed.ended', error: failureOf(event.error) };
  }
}

/**
 * Starts the chat: the chart runs, and after each of its steps the screen shows the prompt and the
 * spinner its state calls for. `done` resolves once the chat has ended (its backend closed).
 *
 * From a script, a prompt is drawn only once the input has been read since the step that asked for
 * it (two macrotasks: the event loop polls the input in between), and only if the chart still wants
 * it then. A script's end may already wait in the pipe while a turn and the commands after it run
 * without any I/O (an embedded session on SQLite with a scripted model): prompted at once, the
 * transcript would end with a prompt the input's end then leaves standing.
 */
export function startChat(client: ChatClient, screen: Screen, input: ChatClientInput): { actor: Actor<ReturnType<typeof chatMachine>>; done: Promise<void> } {
  const actor = createActor(chatMachine(client, screen), { input });
  let promptCheck = 0;
  const showPrompt = (prompt: string | null): void => {
    promptCheck += 1;
    if (prompt === null || input.interactive || screen.promptShown === prompt) {
      screen.setPrompt(prompt);
      return;
    }
    const check = promptCheck;
    setImmediate(() =>
      setImmediate(() => {
        // A later step decided again meanwhile; its own check draws the prompt if it wants one.
        if (check !== promptCheck || actor.getSnapshot().status !== 'active') return;
        screen.setPrompt(screenOf(actor.getSnapshot()).prompt);
      }),
    );
  };
  const done = new Promise<void>((resolve, reject) => {
    actor.subscribe({
      next: (snapshot) => {
        const { prompt, spinner } = screenOf(snapshot);
        screen.spinner(spinner);
        showPrompt(prompt);
        if (snapshot.status === 'done') resolve();
      },
      error: reject,
    });
  });
  actor.start();
  return { actor, done };
}

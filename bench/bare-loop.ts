/**
 * The baseline of `step_overhead_ratio`: a bare, hand-written agent loop with no statecharts.
 * It does the same durable work as the runtime through the same `SessionStorage` (session row,
 * beginTurn with the user message, per step the assistant message and the tool result with its
 * audit row (RL-4: canonical-JSON sha256 of the arguments, decision, durations), endTurn, and the
 * same trace spans, with the same time-ordered ids), calls the model port the same way (a request with system, the
 * conversation, tool definitions; one AbortSignal per turn), validates and runs the same tool, and
 * pushes the same kinds and number of update envelopes into an RxJS Subject.
 */
import { createHash } from 'node:crypto';
import { orderedUuid } from '../src/runtime/ordered-id.js';
import { stableStringify } from '../machines/signature.js';
import { Subject } from 'rxjs';
import { z } from 'zod';
import {
  UPDATE_VERSION,
  type AnyTool,
  type ChatMessage,
  type ModelPort,
  type ModelResponse,
  type RequestMessage,
  type SessionStorage,
  type SessionUpdate,
  type StoredMessage,
  type SystemPart,
  type ToolDefinition,
  type ToolResultStatus,
  type TraceSpan,
  type UpdateEnvelope,
} from '../src/index.js';
import { renderSandboxPolicy } from '../src/context/world-state/sandbox-policy.js';

export interface BareLoopOptions {
  storage: SessionStorage;
  model: ModelPort;
  tool: AnyTool;
  /** Write the trace spans the runtime writes (turn, model call, tool call). */
  spans?: boolean;
  maxModelCalls?: number;
}

const SANDBOX_POLICY = renderSandboxPolicy('auto');

export class BareLoop {
  readonly updates = new Subject<UpdateEnvelope>();
  private readonly system: SystemPart[] = [{ key: 'core/agent-system', content: 'You are a helpful agent.' }];
  private readonly tools: ToolDefinition[];
  private readonly spans: boolean;
  private readonly maxModelCalls: number;
  private sequence = 0;
  /** Next message sequence per session (the runtime keeps it in its chat state). */
  private readonly messageSequence = new Map<string, number>();

  constructor(private readonly options: BareLoopOptions) {
    const { tool } = options;
    this.tools = [{ name: tool.name, description: tool.description, inputSchema: z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) }];
    this.spans = options.spans ?? true;
    this.maxModelCalls = options.maxModelCalls ?? 50;
  }

  private readonly firstTurn = new Set<string>();

  async createSession(): Promise<string> {
    const id = `ses_${orderedUuid()}`;
    this.firstTurn.add(id);
    await this.options.storage.createSession({ id, agent: 'default', permissionMode: 'auto', workspaceDir: null, createdAtMs: Date.now() });
    return id;
  }

  /** One user turn: model → (tool → model)* → final text. Resolves with the final text. */
  async runTurn(sessionId: string, text: string): Promise<string> {
    const { storage, model, tool } = this.options;
    const turnId = `turn_${orderedUuid()}`;
    const controller = new AbortController();
    const emit = (update: SessionUpdate) => this.emit(sessionId, turnId, update);
    const stored = (message: ChatMessage): StoredMessage => {
      const sequence = this.messageSequence.get(sessionId) ?? 1;
      this.messageSequence.set(sessionId, sequence + 1);
      return { id: `msg_${orderedUuid()}`, sessionId, turnId, sequence, createdAtMs: Date.now(), message };
    };
    const span = (id: string, kind: TraceSpan['kind'], name: string, source: TraceSpan['source']): TraceSpan => ({
      id, sessionId, turnId, kind, name, source, status: 'running', errorCode: null, startedAtMs: Date.now(), endedAtMs: null,
    });

    emit({ type: 'turn_started', clientRequestId: turnId });
    emit({ type: 'phase_changed', phase: 'starting' });
    const conversation: RequestMessage[] = [{ role: 'user', text }];
    await storage.beginTurn(
      { id: turnId, sessionId, clientRequestId: turnId, startedAtMs: Date.now() },
      [stored({ role: 'user', kind: 'normal', text })],
    );
    if (this.spans) await storage.writeSpans([{ type: 'start', span: span(`turn:${turnId}`, 'turn', 'turn', 'system') }]);

    let finalText = '';
    for (let call = 1; call <= this.maxModelCalls; call++) {
      // The runtime's first world-state sample of a session (its sandbox policy) is one more message write.
      if (call === 1 && this.firstTurn.delete(sessionId)) {
        const policy = { role: 'user' as const, kind: 'world_state' as const, section: 'runtime/sandbox-policy' as const, text: SANDBOX_POLICY };
        await storage.appendMessage(stored(policy));
        conversation.push({ role: 'user', text: SANDBOX_POLICY });
      }
      emit({ type: 'phase_changed', phase: 'running_model' });
      const spanId = `model:${turnId}:${call}`;
      if (this.spans) await storage.writeSpans([{ type: 'start', span: span(spanId, 'model_call', `model call ${call}`, 'model') }]);
      const request = { system: this.system, messages: [...conversation], tools: this.tools, maxOutputTokens: model.capabilities.maxOutputTokens };
      let response: ModelResponse | undefined;
      for await (const event of model.stream(request, { signal: controller.signal })) {
        if (event.type === 'response_completed') response = event.response;
        else emit({ type: event.type, text: event.text });
      }
      if (!response) throw new Error('the model stream ended without a completed response');
      if (this.spans) await storage.writeSpans([{ type: 'end', spanId, end: { status: 'succeeded', errorCode: null, endedAtMs: Date.now() } }]);

      const { text: answer, reasoning, toolCalls } = response;
      await storage.appendMessage(stored({ role: 'assistant', text: answer, reasoning, toolCalls }));
      conversation.push({ role: 'assistant', text: answer, reasoning, toolCalls });
      emit({ type: 'draft_cleared' });
      if (toolCalls.length === 0) {
        finalText = answer;
        break;
      }

      emit({ type: 'phase_changed', phase: 'running_tools' });
      for (const toolCall of toolCalls) {
        if (this.spans) await storage.writeSpans([{ type: 'start', span: span(`tool:${turnId}:${toolCall.id}`, 'tool_call', toolCall.name, 'registry') }]);
        emit({ type: 'tool_call_started', toolCallId: toolCall.id, name: toolCall.name, status: 'validating' });
        let status: ToolResultStatus = 'failed';
        let content: string;
        const sent = JSON.parse(toolCall.argumentsText) as unknown;
        const parsed = tool.input.safeParse(sent);
        const startedAtMs = Date.now();
        if (parsed.success) {
          const result = await tool.execute(parsed.data, {
            sessionId,
            turnId,
            toolCallId: toolCall.id,
            signal: controller.signal,
            approvedPaths: [],
            progress: () => undefined,
          });
          status = result.status;
          content = result.content;
        } else {
          content = `InvalidArguments: ${z.prettifyError(parsed.error)}`;
        }
        const audit = {
          toolCallId: toolCall.id,
          toolName: toolCall.name,
          argumentsHash: createHash('sha256').update(stableStringify(sent)).digest('hex'),
          dispatchedArgumentsHash: null,
          verdict: parsed.success ? ('allowed' as const) : ('none' as const),
          decidedBy: parsed.success ? ('mode' as const) : null,
          status,
          errorCode: null,
          permissionWaitMs: null,
          executionMs: parsed.success ? Date.now() - startedAtMs : null,
          principal: null,
        };
        await storage.appendMessage(stored({ role: 'tool', toolCallId: toolCall.id, toolName: toolCall.name, status, content }), undefined, audit);
        conversation.push({ role: 'tool', toolCallId: toolCall.id, toolName: toolCall.name, status: status === 'succeeded' ? 'success' : 'error', content });
        if (this.spans) await storage.writeSpans([{ type: 'end', spanId: `tool:${turnId}:${toolCall.id}`, end: { status, errorCode: null, endedAtMs: Date.now() } }]);
        emit({ type: 'tool_call_finished', toolCallId: toolCall.id, status });
      }
    }

    emit({ type: 'phase_changed', phase: 'completed' });
    const finishedAtMs = Date.now();
    if (this.spans) await storage.writeSpans([{ type: 'end', spanId: `turn:${turnId}`, end: { status: 'succeeded', errorCode: null, endedAtMs: finishedAtMs } }]);
    await storage.endTurn(turnId, { status: 'completed', errorCode: null, errorMessage: null, finalText, finishedAtMs });
    emit({ type: 'turn_finished', outcome: { status: 'completed', finalText } });
    return finalText;
  }

  private emit(sessionId: string, turnId: string, update: SessionUpdate): void {
    this.sequence += 1;
    this.updates.next({ version: UPDATE_VERSION, sessionId, turnId, sequence: this.sequence, occurredAtMs: Date.now(), update });
  }
}

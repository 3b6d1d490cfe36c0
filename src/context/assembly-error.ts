import { TurnFailure } from '../protocol/tool-result.js';

/** A request that cannot be assembled fails the model call as `model_protocol_error` (RT-9). */
export class ContextAssemblyError extends TurnFailure {
  constructor(
    readonly reason: 'InvalidSystemContext' | 'SystemMessageInConversation',
    message: string,
  ) {
    super('model_protocol_error', `${reason}: ${message}`);
    this.name = 'ContextAssemblyError';
  }
}

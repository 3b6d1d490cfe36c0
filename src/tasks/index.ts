/** Tasks (seed 002): the lifecycle protocol over RabbitMQ, workers, and the event consumer. */
export { startWorker, type WorkerOptions, type TaskWorker } from './worker.js';
export { submitTask, requestTaskControl, type TaskClient, type ControlResult } from './task-client.js';
export { createTaskEventConsumer, storagePositions, storageFetcher, type TaskEventConsumer, type TaskEventConsumerOptions, type PositionStore, type FetchRange, type Gap } from './event-consumer.js';
export { approveAll, TaskRunner, type AdmissionGate } from './task-runner.js';
export { HCP_VERSION, TASK_EVENT_TYPES, taskEventEnvelopeSchema, toEnvelope, type TaskEventEnvelope, type TaskEventType } from './task-envelope.js';
export { taskTopology, DEFAULT_NAMESPACE, eventRoutingKey, controlRoutingKey, type TaskTopology } from './task-topology.js';
export { RESUME_TEXT } from './session-driver.js';

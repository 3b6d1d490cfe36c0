export type * from './session-storage.js';
export type { Database } from './schema.js';
export { KyselySessionStorage, type KyselyStorageOptions } from './kysely-storage.js';
export { sqliteStorage, sqliteDatabase, type SqliteOptions } from './sqlite.js';
export { postgresStorage, postgresDatabase, type PostgresOptions } from './postgres.js';
export { withFaults, StorageFaultError, type FaultyStorage, type StorageCall, type StorageMethod } from './faulty-storage.js';
export { migrationProvider } from './migrations/index.js';

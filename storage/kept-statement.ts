import { CompiledQuery, type Kysely } from 'kysely';
import type { DialectName } from './dialect.js';
import type { Database } from './schema.js';

/**
 * A statement every turn or step runs, whose text is built once per dialect and shape and then run
 * with its parameters listed straight from the caller's values. Building through Kysely's query
 * builder on every call cost more than running the statement on SQLite. The text is built from a
 * sample through the builder, and kept only if the sample's parameters come out exactly as
 * `parameters` lists them, so the two cannot drift apart unnoticed.
 */
export class KeptStatement<A> {
  private readonly texts = new Map<string, string>();

  constructor(
    /** The statement for these values, through Kysely: the one description of its SQL. */
    private readonly build: (db: Kysely<Database>, dialect: DialectName, args: A) => CompiledQuery<unknown>,
    /** The parameters for these values, in the order the built statement takes them. */
    private readonly parameters: (args: A) => unknown[],
    /** Statements whose text differs with the values (optional columns) name their shape here. */
    private readonly shapeOf: (args: A) => string = () => '',
  ) {}

  compile(db: Kysely<Database>, dialect: DialectName, args: A): CompiledQuery<unknown> {
    const key = `${dialect}|${this.shapeOf(args)}`;
    const parameters = this.parameters(args);
    const known = this.texts.get(key);
    if (known !== undefined) return CompiledQuery.raw(known, parameters);
    const built = this.build(db, dialect, args);
    if (built.parameters.length !== parameters.length || built.parameters.some((p, i) => p !== parameters[i])) {
      throw new Error(`a kept statement lists its parameters in another order than its builder: ${built.sql}`);
    }
    this.texts.set(key, built.sql);
    return built;
  }
}

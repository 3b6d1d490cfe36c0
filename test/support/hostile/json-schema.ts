import fc from 'fast-check';

/** The part of JSON Schema the OpenAPI document of the host uses. */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
}

export interface SchemaContext {
  /** `#/components/schemas/…` targets. */
  components: Record<string, JsonSchema>;
  /** Strings the service knows (live ids, names) that generated strings are sometimes drawn from, so requests reach past lookups. */
  known: readonly string[];
}

/**
 * Values that satisfy `schema` — or very nearly: strings stay within the limits only so long, and
 * required properties are sometimes left out. The request generators corrupt them further.
 */
export function conforming(schema: JsonSchema, context: SchemaContext): fc.Arbitrary<unknown> {
  if (schema.$ref) return conforming(context.components[schema.$ref.split('/').at(-1)!]!, context);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => conforming(s, context)));
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'object':
      return objectOf(schema, context);
    case 'array':
      return fc.array(conforming(schema.items ?? {}, context), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) });
    case 'string':
      return stringOf(schema, context);
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1e6, -1e6), max: Math.min(schema.maximum ?? 1e6, 1e6) });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectOf(schema: JsonSchema, context: SchemaContext): fc.Arbitrary<unknown> {
  const shape = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, s]) => [key, conforming(s, context)]));
  // Mostly every required key present; sometimes only some.
  const required = schema.required ?? [];
  const requiredKeys = fc.oneof({ weight: 5, arbitrary: fc.constant(required) }, { weight: 1, arbitrary: fc.subarray(required) });
  return requiredKeys.chain((requiredKeys) => fc.record(shape, { requiredKeys }));
}

function stringOf(schema: JsonSchema, context: SchemaContext): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.min(schema.maxLength ?? 64, 64);
  const generated = fc.oneof(fc.string({ minLength, maxLength }), fc.string({ minLength, maxLength, unit: 'grapheme' }));
  return context.known.length === 0 ? generated : fc.oneof(generated, fc.constantFrom(...context.known));
}

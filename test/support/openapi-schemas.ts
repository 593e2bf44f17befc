import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';

/**
 * Compiles schemas of a served OpenAPI 3.1 document (JSON Schema 2020-12) with its `#/components` refs
 * resolved, to check that answers are what /docs promises. Not strict: `example` and `format` are the
 * document's own annotations.
 */
export function schemaCompiler(document: { components: object }): (schema: object) => ValidateFunction {
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema({ $id: 'openapi', components: document.components });
  return (schema) => ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')));
}

/** Why a body does not match its documented schema, or null. */
export function undocumented(validate: ValidateFunction, body: unknown): string | null {
  return validate(body) ? null : `a body unlike its documented schema (${JSON.stringify(validate.errors?.slice(0, 2))})`;
}

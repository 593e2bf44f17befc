/**
 * Base of every error a lib raises on purpose. Libs never throw HttpException:
 * they name what went wrong with a code, and apps/api maps codes to statuses.
 * Each domain subclasses it with its own code enum, which types the inherited constructor.
 */
export abstract class DomainException<Code extends string = string> extends Error {
  constructor(
    readonly code: Code,
    readonly detail: string,
  ) {
    super(detail);
    this.name = new.target.name;
  }
}

/** For a switch over a closed union: a new member without a case does not compile. */
export function assertUnreachable(value: never): never {
  throw new Error(`Unhandled case: ${String(value)}`);
}

/** One entry of the 422 body. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input: unknown;
  ctx: Record<string, unknown>;
}

/** A request failed validation: rendered as 422 with an array `detail`. */
export class ValidationFailedException extends Error {
  constructor(readonly issues: ValidationIssue[]) {
    super(issues.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; '));
    this.name = 'ValidationFailedException';
  }
}

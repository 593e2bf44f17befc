import { Injectable, Paramtype, Type } from '@nestjs/common';

import { RequestValidationPipe } from '../errors/validation.pipe';

/**
 * Tool arguments become the mirrored route's DTO through the same validation pipe as REST, so a
 * tool accepts exactly what its route accepts (bounds, defaults) and refuses with the same issues.
 */
@Injectable()
export class McpArguments {
  private readonly pipe = new RequestValidationPipe();

  async as<T>(dto: Type<T>, args: Record<string, unknown>, location: Paramtype = 'query'): Promise<T> {
    return (await this.pipe.transform(args, { type: location, metatype: dto })) as T;
  }
}

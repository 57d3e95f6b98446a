import type { Ctx } from '../core.js';
import { Checker } from '../validate.js';

/**
 * The request's JSON body as an object (422 `body is required` / `must be an object` otherwise).
 * @param ctx the request
 */
export function bodyObject(ctx: Ctx): Record<string, unknown> {
  const c = new Checker();
  const b = c.object(ctx.body, 'body', true);
  c.done();
  return b!;
}

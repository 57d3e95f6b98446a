import { ApiError } from '../../errors.js';
import type { Reply, Route } from '../core.js';
import { Checker } from '../validate.js';
import { isRole, type Role } from '../../auth/roles.js';
import type { HasAccounts } from '../../service/face.js';
import { bodyObject } from './body.js';

/** What `/auth/*` uses: the accounts' commands. */
export type AuthRoutesFace = HasAccounts;

function tokenReply(pair: { accessToken: string; tokenType: string; expiresIn: number; refreshToken: string }): Reply {
  return { data: { access_token: pair.accessToken, token_type: pair.tokenType, expires_in: pair.expiresIn, refresh_token: pair.refreshToken } };
}

/** `POST /auth/token`, `/auth/refresh`, `/auth/revoke` and API key management. */
export function authRoutes(svc: AuthRoutesFace): Route[] {
  return [
    {
      method: 'POST',
      pattern: '/auth/token',
      category: 'authentication',
      role: null,
      async handler(ctx) {
        const b = bodyObject(ctx);
        const c = new Checker();
        const username = c.string(b.username, 'username', 128, true);
        const password = c.string(b.password, 'password', 1024, true);
        c.only(b, '', ['username', 'password']);
        c.done();
        const pair = await svc.auth.login(username!, password!);
        if (!pair) throw new ApiError('AUTHENTICATION_ERROR', 'wrong username or password');
        return tokenReply(pair);
      },
    },
    {
      method: 'POST',
      pattern: '/auth/refresh',
      category: 'authentication',
      role: null,
      async handler(ctx) {
        const b = bodyObject(ctx);
        const c = new Checker();
        const token = c.string(b.refresh_token, 'refresh_token', 512, true);
        c.only(b, '', ['refresh_token']);
        c.done();
        const r = await svc.auth.refresh(token!);
        if (!r.ok) throw new ApiError('AUTHENTICATION_ERROR', 'refresh token is invalid, expired or already used', { reason: r.reason });
        return tokenReply(r.pair);
      },
    },
    {
      method: 'POST',
      pattern: '/auth/revoke',
      category: 'authentication',
      role: null,
      async handler(ctx) {
        const b = bodyObject(ctx);
        const c = new Checker();
        const token = c.string(b.token, 'token', 4096, true);
        c.only(b, '', ['token']);
        c.done();
        const kind = await svc.auth.revoke(token!);
        if (kind === 'unknown') throw new ApiError('RESOURCE_NOT_FOUND', 'not a token this service issued');
        return { data: { revoked: true, token_type: kind } };
      },
    },
    {
      method: 'GET',
      pattern: '/auth/keys',
      category: 'configuration',
      role: 'admin',
      handler: () => ({ data: { keys: svc.auth.listApiKeys() } }),
    },
    {
      method: 'POST',
      pattern: '/auth/keys',
      category: 'configuration',
      role: 'admin',
      handler(ctx) {
        const b = bodyObject(ctx);
        const c = new Checker();
        const role = c.string(b.role, 'role', 16, true, ['viewer', 'operator', 'admin']);
        const name = c.string(b.name, 'name', 128);
        c.only(b, '', ['role', 'name']);
        c.done();
        if (!isRole(role)) throw ApiError.fields([{ field: 'role', message: 'role must be viewer, operator or admin', received_value: role }]);
        const { key, info } = svc.auth.createApiKey(role as Role, name);
        return { status: 201, data: { ...info, key } };
      },
    },
    {
      method: 'DELETE',
      pattern: '/auth/keys/:key_id',
      category: 'configuration',
      role: 'admin',
      handler(ctx) {
        const id = ctx.params.key_id!;
        const r = svc.auth.revokeApiKey(id);
        if (r === 'not_found') throw new ApiError('RESOURCE_NOT_FOUND', `no API key ${id}`);
        if (r === 'env')
          throw ApiError.fields([
            { field: 'key_id', message: `API key ${id} comes from CSIPOSE_API_KEYS: remove it from that variable instead`, received_value: id },
          ]);
        return { data: { id, revoked: true, already_revoked: r === 'already_revoked' } };
      },
    },
  ];
}

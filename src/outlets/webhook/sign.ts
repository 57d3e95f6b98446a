import { createHmac, randomBytes } from 'node:crypto';

/**
 * Webhook signatures: `X-Csipose-Signature: t=<unix seconds>,v1=<hex>`, where the hex is
 * HMAC-SHA256 with the webhook's secret over `<t>.<body>` (the body's exact bytes). `t` is the
 * time of the attempt, so a receiver can refuse a replay of an old request by its age; the body,
 * and its `id`, stay the same on every attempt. While a rotated-out secret is still honoured, the
 * header carries one `v1=` per secret, newest first.
 *
 * A receiver recomputes the HMAC over `t + "." + raw body` with its secret, compares it in
 * constant time with each `v1`, and refuses the request when none matches or when `t` is more
 * than its tolerance (5 minutes is usual) away from its clock.
 */

/** The header that carries the signature. */
export const SIGNATURE_HEADER = 'X-Csipose-Signature';

/** A new webhook secret: `whsec_` and 32 random bytes in base64url. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * The signature of a body at a time with one secret.
 * @param secret the webhook's secret (the whole `whsec_...` string is the key)
 * @param t Unix seconds of the attempt
 * @param body the exact body sent
 * @returns lower-case hex of HMAC-SHA256(secret, `${t}.${body}`)
 */
export function sign(secret: string, t: number, body: string): string {
  return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
}

/**
 * The signature header's value.
 * @param secrets the secrets to sign with, newest first (a rotated-out one while it is honoured)
 * @param t Unix seconds of the attempt
 * @param body the exact body sent
 * @example signatureHeader(['whsec_...'], 1732780800, '{"id":"whd_..."}') // 't=1732780800,v1=5f2b...'
 */
export function signatureHeader(secrets: readonly string[], t: number, body: string): string {
  return [`t=${t}`, ...secrets.map((s) => `v1=${sign(s, t, body)}`)].join(',');
}

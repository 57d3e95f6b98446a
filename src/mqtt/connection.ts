import type { MqttClient } from 'mqtt';

/** Reconnect backoff of every MQTT client here: the first retry waits this long, each failure doubles it ... */
export const RECONNECT_MIN_MS = 500;
/** ... up to this. */
export const RECONNECT_MAX_MS = 30_000;

/**
 * Exponential reconnect backoff for an MQTT.js client. MQTT.js retries on a fixed
 * `reconnectPeriod`, reading it afresh before each wait: raising it as every attempt starts
 * (the `reconnect` event) doubles the wait, and a connection resets it.
 * @param client a client connected with `reconnectPeriod: RECONNECT_MIN_MS`
 * @param onReconnected called on every connection after the first, with the number of reconnections so far
 * @example withBackoff(mqtt.connect(url, { reconnectPeriod: RECONNECT_MIN_MS }))
 */
export function withBackoff(client: MqttClient, onReconnected?: (reconnects: number) => void): void {
  let delay = RECONNECT_MIN_MS;
  let connections = 0;
  client.on('connect', () => {
    if (connections++ > 0) onReconnected?.(connections - 1);
    delay = RECONNECT_MIN_MS;
    client.options.reconnectPeriod = delay;
  });
  client.on('reconnect', () => {
    delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    client.options.reconnectPeriod = delay;
  });
}

/**
 * A broker URL as it may be shown in a message or a report: any userinfo is cut out.
 * @example brokerName('mqtt://u:secret@host:1883') // 'mqtt://host:1883'
 */
export function brokerName(url: string): string {
  return url.replace(/\/\/[^/]*@/, '//');
}

/**
 * MQTT credentials from the environment (`CSIPOSE_MQTT_USERNAME`, `CSIPOSE_MQTT_PASSWORD`),
 * never from configuration (DECISIONS "MQTT").
 * @param env the environment
 */
export function envCredentials(env: Record<string, string | undefined>): { username?: string; password?: string } {
  const username = env.CSIPOSE_MQTT_USERNAME || undefined;
  const password = env.CSIPOSE_MQTT_PASSWORD || undefined;
  return { ...(username !== undefined ? { username } : {}), ...(password !== undefined ? { password } : {}) };
}

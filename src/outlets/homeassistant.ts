import type { ActivityEvent, PoseAlert, PoseFrame } from '../pose/types.js';

/**
 * Home Assistant MQTT discovery (https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery):
 * each environment appears as one device with a person-count sensor, an occupancy binary sensor,
 * a fall-alert binary sensor and the system status, all read from one retained state topic.
 */

/** A fall alert holds the fall sensor on this long unless the person is seen getting up (`fall_recovery`). */
export const FALL_HOLD_MS = 5 * 60_000;

/** The retained state every entity of an environment's device reads. */
export interface HaState {
  person_count: number;
  occupied: boolean;
  fall_alert: boolean;
  /** The system state (`running`, `stopped`, ...). */
  status: string;
}

/** What the state of one environment's device is made from, kept by the outlet. */
export class HaEnvironment {
  personCount = 0;
  status = 'unknown';
  /** Track id of the last fall alert and when it expires (ms), when one holds. */
  private fall: { trackId: number; until: number } | undefined;

  /** A pose frame: the person count. */
  frame(f: PoseFrame): void {
    this.personCount = f.persons.length;
  }

  /** An alert: a fall alert switches the fall sensor on. */
  alert(a: PoseAlert): void {
    if (a.type === 'fall_detection') this.fall = { trackId: a.trackId, until: a.time + FALL_HOLD_MS };
  }

  /** An event: the fallen person's recovery switches it off. */
  event(e: ActivityEvent): void {
    if (e.type === 'fall_recovery' && this.fall && e.trackId === this.fall.trackId) this.fall = undefined;
  }

  /** The state at a time (epoch ms, the pipeline's clock). */
  state(now: number): HaState {
    if (this.fall && now >= this.fall.until) this.fall = undefined;
    return { person_count: this.personCount, occupied: this.personCount > 0, fall_alert: this.fall !== undefined, status: this.status };
  }
}

/** Topics of one environment under the publisher's prefix. */
export interface EnvironmentTopics {
  status: string;
  state: string;
}

/** An id safe in a topic level and as a Home Assistant object id. */
function objectId(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, '_');
}

/**
 * The discovery messages of one environment's device: topic and retained JSON payload each.
 * @param prefix Home Assistant's discovery prefix (config `streaming.mqtt_homeassistant_prefix`)
 * @param environmentId the environment
 * @param name its display name
 * @param topics its status and state topics
 * @param version the service version (the device's software version)
 * @returns the config messages, in a stable order
 * @example haDiscovery('homeassistant', 'default', 'Living room', topics, '0.1.0')[0].topic
 * // 'homeassistant/sensor/csipose_default/person_count/config'
 */
export function haDiscovery(
  prefix: string,
  environmentId: string,
  name: string,
  topics: EnvironmentTopics,
  version: string,
): Array<{ topic: string; payload: string }> {
  const node = `csipose_${objectId(environmentId)}`;
  const device = { identifiers: [node], name: `${name} (csipose)`, manufacturer: 'csipose', model: 'WiFi CSI pose service', sw_version: version };
  // The status topic carries the system_status message; the last will and a clean shutdown put {"status":"offline"} there.
  const availability = [{ topic: topics.status, value_template: "{{ 'offline' if value_json.status == 'offline' else 'online' }}" }];
  const common = { device, availability, state_topic: topics.state };
  const entity = (component: 'sensor' | 'binary_sensor', id: string, config: Record<string, unknown>) => ({
    topic: `${prefix}/${component}/${node}/${id}/config`,
    payload: JSON.stringify({ ...config, unique_id: `${node}_${id}`, object_id: `${node}_${id}`, ...common }),
  });
  return [
    entity('sensor', 'person_count', {
      name: 'Person count',
      value_template: '{{ value_json.person_count }}',
      state_class: 'measurement',
      unit_of_measurement: 'persons',
      icon: 'mdi:account-multiple',
    }),
    entity('binary_sensor', 'occupancy', {
      name: 'Occupancy',
      device_class: 'occupancy',
      value_template: "{{ 'ON' if value_json.occupied else 'OFF' }}",
    }),
    entity('binary_sensor', 'fall', {
      name: 'Fall alert',
      device_class: 'safety',
      value_template: "{{ 'ON' if value_json.fall_alert else 'OFF' }}",
    }),
    entity('sensor', 'status', {
      name: 'System status',
      value_template: '{{ value_json.status }}',
      icon: 'mdi:heart-pulse',
      entity_category: 'diagnostic',
    }),
  ];
}

/** A zone over the whole floor plan: every tracked person with a floor position raises an intrusion alert. */
export const ROOM_ZONE = {
  id: 'room',
  name: 'Whole room',
  polygon: [
    [-50, -50],
    [50, -50],
    [50, 50],
    [-50, 50],
  ],
  severity: 'low',
};

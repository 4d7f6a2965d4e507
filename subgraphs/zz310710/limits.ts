/** The zz310710 area's input limits, one constant each, with no imports (zod, class-validator and the service read them). */

/** Longest note, in characters. */
export const MAX_NOTE_LENGTH = 200;

/** A problem with how the process was configured: boot stops with this one message, no stack. */
export class BootError extends Error {}

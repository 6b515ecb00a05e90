/** setns(2) on the calling thread. Throws an Error (with `errno`) carrying strerror text on failure. */
export declare function setns(fd: number, nstype: number): void
/** CLONE_NEWNET (0x40000000). */
export declare const CLONE_NEWNET: number

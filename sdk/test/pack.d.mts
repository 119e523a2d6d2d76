// Types of pack.mjs for the TypeScript tests.
export declare const sdk: string;
export declare function bin(name: string): string;
export declare function pack(dest: string): string;
export declare function install(dir: string, tarball: string): void;

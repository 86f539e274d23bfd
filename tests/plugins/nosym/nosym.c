/* A shared object that is not an imgpipe plugin: no imgpipe_stage symbol. */
__attribute__((visibility("default"))) int not_a_plugin(void) { return 42; }

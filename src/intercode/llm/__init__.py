"""Chat models: the client, and a scripted server that speaks the same protocol."""

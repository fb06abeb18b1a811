"""The OSS daemon: objects of the OSTs it serves, as files in one data directory per OST."""

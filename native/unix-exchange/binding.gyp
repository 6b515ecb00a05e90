{
  "targets": [
    {
      "target_name": "unix_exchange",
      "sources": ["exchange.c"],
      "cflags": ["-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}

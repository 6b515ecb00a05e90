{
  "targets": [
    {
      "target_name": "netns",
      "sources": ["netns.c"],
      "cflags": ["-Wall", "-Wextra", "-Wno-unused-parameter"]
    }
  ]
}

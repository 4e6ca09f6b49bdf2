import { describe, expect, it } from "vitest"
import { baseImages, DockerfileError, instructions } from "../../server/builds/dockerfile.ts"

describe("baseImages", () => {
  it("finds FROM images, normalised, without stages, scratch or build contexts", () => {
    const dockerfile = [
      "# syntax=docker/dockerfile:1.4",
      "FROM langchain/langgraphjs-api:20 AS base",
      "FROM --platform=linux/amd64 python:3.12-slim as py",
      "FROM base",
      "FROM scratch",
      "COPY --from=py /x /x",
      "COPY --from=outer-lib . /deps/lib",
      "COPY --from=ghcr.io/acme/tools:1 /bin/tool /bin/tool",
      "COPY --from=0 /a /a",
      "RUN --mount=type=cache,target=/root/.npm --mount=type=bind,from=registry.example.com/x/y:2,target=/y true"
    ].join("\n")
    expect(baseImages(dockerfile, { buildContexts: ["outer-lib"] })).toEqual([
      "docker.io/langchain/langgraphjs-api:20",
      "docker.io/library/python:3.12-slim",
      "ghcr.io/acme/tools:1",
      "registry.example.com/x/y:2"
    ])
  })

  it("substitutes global ARGs (defaults, build arguments, ${VAR:-default}) in FROM", () => {
    const dockerfile = "ARG REG=127.0.0.1:5000\nARG TAG\nFROM ${REG}/acme/base:${TAG:-24}\nARG REG=ignored\nFROM $REG/acme/other\n"
    expect(baseImages(dockerfile)).toEqual(["127.0.0.1:5000/acme/base:24", "127.0.0.1:5000/acme/other:latest"])
    expect(baseImages(dockerfile, { buildArgs: { TAG: "25", REG: "ghcr.io" } })).toEqual(["ghcr.io/acme/base:25", "ghcr.io/acme/other:latest"])
  })

  it("joins continuation lines, skips comments and heredoc bodies, honours the escape directive", () => {
    const dockerfile = ["# escape=`", "FROM `", "  # a comment inside", "  busybox:1", "RUN <<EOF", "FROM not-an-image:1", "EOF", "FROM alpine"].join("\n")
    expect(instructions(dockerfile).map((i) => `${i.keyword} ${i.args}`)).toEqual(["FROM busybox:1", "RUN <<EOF", "FROM alpine"])
    expect(baseImages(dockerfile)).toEqual(["docker.io/library/busybox:1", "docker.io/library/alpine:latest"])
  })

  it("rejects a Dockerfile without FROM and invalid image names, naming the line", () => {
    expect(() => baseImages("RUN true\n")).toThrow(DockerfileError)
    expect(() => baseImages("FROM busybox\nFROM Not_Valid!\n")).toThrow(/line 2/)
  })
})

#include "config/layer_shapes.h"

#include <map>

namespace sparse_layers::config {
namespace {

// Function-local statics: registrations run during static initialisation, in
// any order across translation units.
std::map<std::string, FfnShape>& FfnShapes() {
  static auto* shapes = new std::map<std::string, FfnShape>;
  return *shapes;
}

std::map<std::string, AttentionShape>& AttentionShapes() {
  static auto* shapes = new std::map<std::string, AttentionShape>;
  return *shapes;
}

template <typename Shape>
std::optional<Shape> Find(const std::map<std::string, Shape>& shapes,
                          const std::string& name) {
  const auto it = shapes.find(name);
  if (it == shapes.end()) return std::nullopt;
  return it->second;
}

template <typename Shape>
std::vector<std::string> Names(const std::map<std::string, Shape>& shapes,
                               std::optional<Shape> only) {
  std::vector<std::string> names;
  for (const auto& [name, shape] : shapes) {
    if (!only.has_value() || shape == *only) names.push_back(name);
  }
  return names;
}

}  // namespace

void RegisterFfnShape(const std::string& name, FfnShape shape) {
  FfnShapes()[name] = shape;
}

void RegisterAttentionShape(const std::string& name, AttentionShape shape) {
  AttentionShapes()[name] = shape;
}

std::optional<FfnShape> FindFfnShape(const std::string& name) {
  return Find(FfnShapes(), name);
}

std::optional<AttentionShape> FindAttentionShape(const std::string& name) {
  return Find(AttentionShapes(), name);
}

std::vector<std::string> FfnNames(std::optional<FfnShape> shape) {
  return Names(FfnShapes(), shape);
}

std::vector<std::string> AttentionNames(std::optional<AttentionShape> shape) {
  return Names(AttentionShapes(), shape);
}

}  // namespace sparse_layers::config

"""Object-oriented: a small ray tracer (vectors, spheres, planes, lights, shading)."""

import math

N = 220  # image side in pixels


class Vec:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x = x
        self.y = y
        self.z = z

    def __add__(self, o):
        return Vec(self.x + o.x, self.y + o.y, self.z + o.z)

    def __sub__(self, o):
        return Vec(self.x - o.x, self.y - o.y, self.z - o.z)

    def __mul__(self, k):
        return Vec(self.x * k, self.y * k, self.z * k)

    def dot(self, o):
        return self.x * o.x + self.y * o.y + self.z * o.z

    def norm(self):
        length = math.sqrt(self.dot(self))
        return self * (1.0 / length) if length else self


class Ray:
    def __init__(self, origin, direction):
        self.origin = origin
        self.direction = direction.norm()

    def at(self, t):
        return self.origin + self.direction * t


class Material:
    def __init__(self, color, diffuse=0.8, specular=0.3, reflect=0.2):
        self.color = color
        self.diffuse = diffuse
        self.specular = specular
        self.reflect = reflect


class Thing:
    def __init__(self, material):
        self.material = material

    def intersect(self, ray):
        raise NotImplementedError

    def normal(self, point):
        raise NotImplementedError


class Sphere(Thing):
    def __init__(self, center, radius, material):
        super().__init__(material)
        self.center = center
        self.radius2 = radius * radius

    def intersect(self, ray):
        oc = ray.origin - self.center
        b = oc.dot(ray.direction)
        c = oc.dot(oc) - self.radius2
        disc = b * b - c
        if disc < 0:
            return None
        root = math.sqrt(disc)
        t = -b - root
        if t > 1e-6:
            return t
        t = -b + root
        return t if t > 1e-6 else None

    def normal(self, point):
        return (point - self.center).norm()


class Plane(Thing):
    def __init__(self, point, normal, material):
        super().__init__(material)
        self.point = point
        self.n = normal.norm()

    def intersect(self, ray):
        denom = self.n.dot(ray.direction)
        if abs(denom) < 1e-9:
            return None
        t = (self.point - ray.origin).dot(self.n) / denom
        return t if t > 1e-6 else None

    def normal(self, point):
        return self.n


class Scene:
    def __init__(self):
        red = Material(Vec(0.9, 0.2, 0.2))
        blue = Material(Vec(0.2, 0.3, 0.9), reflect=0.5)
        floor = Material(Vec(0.7, 0.7, 0.7), specular=0.0, reflect=0.1)
        self.things = [
            Sphere(Vec(0.0, 1.0, 5.0), 1.0, red),
            Sphere(Vec(-1.8, 0.6, 6.0), 0.6, blue),
            Sphere(Vec(1.6, 0.5, 4.0), 0.5, blue),
            Plane(Vec(0.0, 0.0, 0.0), Vec(0.0, 1.0, 0.0), floor),
        ]
        self.lights = [(Vec(-3.0, 5.0, 0.0), 0.8), (Vec(4.0, 3.0, 2.0), 0.5)]

    def closest(self, ray):
        best, hit = None, None
        for thing in self.things:
            t = thing.intersect(ray)
            if t is not None and (best is None or t < best):
                best, hit = t, thing
        return best, hit

    def shadowed(self, point, light):
        to_light = light - point
        distance = math.sqrt(to_light.dot(to_light))
        t, _ = self.closest(Ray(point, to_light))
        return t is not None and t < distance

    def trace(self, ray, depth=0):
        t, thing = self.closest(ray)
        if thing is None:
            return Vec(0.1, 0.1, 0.15)
        point = ray.at(t)
        n = thing.normal(point)
        m = thing.material
        color = m.color * 0.1
        for position, intensity in self.lights:
            if self.shadowed(point, position):
                continue
            to_light = (position - point).norm()
            lambert = max(0.0, n.dot(to_light))
            color = color + m.color * (lambert * m.diffuse * intensity)
            half = (to_light - ray.direction).norm()
            color = color + Vec(1.0, 1.0, 1.0) * (max(0.0, n.dot(half)) ** 20 * m.specular)
        if depth < 2 and m.reflect > 0:
            d = ray.direction
            reflected = d - n * (2 * d.dot(n))
            color = color + self.trace(Ray(point, reflected), depth + 1) * m.reflect
        return color


def render(n):
    scene = Scene()
    eye = Vec(0.0, 1.2, -1.0)
    total = 0.0
    for j in range(n):
        for i in range(n):
            x = (i - n / 2) / n
            y = (n / 2 - j) / n + 0.5
            c = scene.trace(Ray(eye, Vec(x, y, 1.0)))
            total += min(c.x, 1.0) + min(c.y, 1.0) + min(c.z, 1.0)
    return round(total, 6)


def main(n=N):
    return render(n)
